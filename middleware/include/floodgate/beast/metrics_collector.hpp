// Prometheus view of the engine: read from its own counters at scrape time.
#pragma once

#include <floodgate/engine/engine.hpp>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace floodgate::config {
class rule_file_watcher;
}

namespace floodgate::beast {

/** A prometheus::Collectable exporting SPEC §6's metrics (names in metric_names.hpp).

    Nothing is recorded per request: every value is read at scrape time from the engine's
    cumulative resource counters, its breakers, rule set and node registry, and from the rule
    file watcher if one is given. Series exist for every tracked resource, zero included, and
    every family is listed from the first scrape, empty ones included (the reload families are
    empty without a watcher).

    @par Thread Safety
    Collect() may run on any thread, concurrently with requests (it takes no lock they take) and
    with other scrapes (serialized by an internal mutex).

    @par Example
    @code
    auto collector = std::make_shared<floodgate::beast::metrics_collector>(engine, &watcher);
    floodgate::beast::metrics_handler metrics{{collector}};
    @endcode
*/
class metrics_collector final : public prometheus::Collectable {
 public:
  /// `watcher` (optional) feeds the reload metrics; both must outlive the collector.
  explicit metrics_collector(const engine& eng, const config::rule_file_watcher* watcher = nullptr);
  ~metrics_collector() override;

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  void collect_resources(std::vector<prometheus::MetricFamily>& out) const;
  void collect_breakers(std::vector<prometheus::MetricFamily>& out) const;
  void collect_rules(std::vector<prometheus::MetricFamily>& out) const;
  void collect_hot_keys(std::vector<prometheus::MetricFamily>& out) const;
  void collect_process(std::vector<prometheus::MetricFamily>& out) const;

  const engine& engine_;
  const config::rule_file_watcher* watcher_;
  mutable std::mutex mutex_;
  /// Last exported success count per resource: success = completed - errors is read from two
  /// counters, so it is clamped to stay monotonic between scrapes.
  mutable std::unordered_map<const void*, std::uint64_t> last_success_;
  /// One breaker series (resource, rule label) across reloads: a changed rule's new breaker goes
  /// on from its predecessor's transition counts (circuit_breaker::carried_transitions), but one
  /// that could not (its label was gone for a while) starts at 0, so what the last scrape saw
  /// under the labels and the new breaker did not carry is added: the counter stays monotonic.
  struct breaker_series {
    std::uint64_t breaker = 0;               ///< its serial (circuit_breaker::serial)
    std::array<std::uint64_t, 4> seen{};     ///< its counts at the last scrape
    std::array<std::uint64_t, 4> earlier{};  ///< counts of the breakers before it
  };
  mutable std::map<std::pair<std::string, std::string>, breaker_series> breaker_series_;
  /// The same for floodgate_hot_key_events_total.
  struct hot_key_series {
    std::uint64_t tracker = 0;  ///< its serial (hot_key_rule_stats::tracker_serial)
    std::uint64_t seen = 0;
    std::uint64_t earlier = 0;
  };
  mutable std::map<std::pair<std::string, std::string>, hot_key_series> hot_key_series_;
  mutable std::shared_ptr<const system_status_source> status_;
};

}  // namespace floodgate::beast
