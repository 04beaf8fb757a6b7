// Prometheus view of the engine: read from its own counters at scrape time.
#pragma once

#include <floodgate/engine/engine.hpp>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <algorithm>
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
  using series_key = std::pair<std::string, std::string>;  ///< resource, rule label
  /** Counter series under one (resource, rule label) across reloads, fed by whichever object
      (a breaker's transitions, a hot-key tracker's events) has those labels; they count what
      was made under the labels: `earlier` + the object's counts - `base` (never below `base`).
      A changed rule's new object that `carried` at least what the last scrape saw of the one
      before goes on from it, so transitions made after that scrape are not lost; any other new
      object counts only what it made itself (`base` = what it carried), and what the last
      scrape saw is kept in `earlier`. An object that `moved` here since the last scrape (an
      unnamed rule whose place in the file changed, even back to where it was) brings counts
      made under other labels: they are its `base`. */
  template <std::size_t N>
  struct carried_series {
    std::uint64_t source = 0;                ///< the object's serial
    std::array<std::uint64_t, N> seen{};     ///< its counts at the last scrape
    std::array<std::uint64_t, N> earlier{};  ///< counts of the objects before it
    std::array<std::uint64_t, N> base{};     ///< its counts not made under these labels

    void update(std::uint64_t serial, const std::array<std::uint64_t, N>& now,
                const std::array<std::uint64_t, N>& carried, bool moved) noexcept {
      if (serial != source || moved) {
        for (std::size_t i = 0; i < N; ++i) {
          if (!moved && carried[i] >= seen[i]) continue;  // goes on from the one before
          earlier[i] += seen[i] - base[i];
          base[i] = moved ? now[i] : std::min(carried[i], now[i]);
        }
      }
      source = serial;
      seen = now;
    }
    std::uint64_t value(std::size_t i) const noexcept { return earlier[i] + seen[i] - base[i]; }
  };
  /// Where each object (by serial) was at the last scrape: one found under other labels moved.
  using series_places = std::unordered_map<std::uint64_t, series_key>;
  static bool moved(const series_places& before, std::uint64_t serial, const series_key& key) {
    const auto was = before.find(serial);
    return was != before.end() && was->second != key;
  }
  mutable std::map<series_key, carried_series<4>> breaker_series_;  ///< transitions
  mutable series_places breaker_places_;
  mutable std::map<series_key, carried_series<1>> hot_key_series_;  ///< hot-key events
  mutable series_places hot_key_places_;
  mutable std::shared_ptr<const system_status_source> status_;
};

}  // namespace floodgate::beast
