// The per-second JSON snapshot behind the dashboard (admin `GET /` and `/floodgate/stream`).
#pragma once

#include <floodgate/engine/engine.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>

namespace floodgate::config {
class rule_file_watcher;
}
namespace floodgate::node {
class cluster_node;
}

namespace floodgate::beast {

/** Builds the dashboard's snapshot of an engine: the source of a @ref dashboard_stream.

    One JSON object on one line:
    - `t`: Unix time in ms;
    - `resources`: `[resource, passQps, blockQps, successQps, exceptionQps, avgRt, concurrency]`
      rows (arrays, to keep 5 minutes of them small), busiest first (pass + block), at most
      `max_resources`, only resources with traffic in the last minute or requests in flight.
      The four rates are the passes, blocks, completions and errors since the previous snapshot
      (a stream takes one a second), from the resource's monotonic totals: the snapshots of a
      stream add up to exactly the requests served. The first snapshot, with nothing before it,
      gives the 1-second window's rates instead;
    - `resourceCount`: every tracked resource; `overflow`: resources refused past the cap;
    - `blocked`: blocks per reason since the previous snapshot;
    - `breakers`: `{resource, rule, state, nextProbeInMs, transitions}` (`nextProbeInMs` null
      unless open; `transitions` the `{from, to, count}` that happened);
    - `reload`: `{file, time, ok, error, successes, failures}` as at `/floodgate/reload`, or null
      without a watcher; `rulesVersion` changes with every successful load;
    - `system`: `{cpuUsage, load1}` while system rules are loaded, else null.

    @par Thread Safety
    Not thread-safe (it keeps the previous block counts): one caller at a time, as a
    dashboard_stream does. The engine and the watcher must outlive it.
*/
class dashboard_snapshot {
 public:
  /// Rows per snapshot: bounds the stream's 5-minute ring whatever the number of resources.
  static constexpr std::size_t max_resources = 1000;

  explicit dashboard_snapshot(const engine& eng,
                              const config::rule_file_watcher* watcher = nullptr)
      : engine_(&eng), watcher_(watcher) {}

  std::string operator()();

 private:
  /// A resource's pass, block, completion and error totals.
  using resource_counts = std::array<std::uint64_t, 4>;
  static resource_counts counts_of(const node::cluster_node& n);

  const engine* engine_;
  const config::rule_file_watcher* watcher_;
  std::array<std::uint64_t, block_reason_count> last_blocked_{};
  /// Each resource's totals at the previous snapshot (nodes live as long as the engine).
  std::unordered_map<const node::cluster_node*, resource_counts> last_counts_;
  bool first_ = true;
  std::uint64_t rules_version_ = ~std::uint64_t{0};  ///< of has_system_rules_
  bool has_system_rules_ = false;
};

}  // namespace floodgate::beast
