// The Redis token source for clusterMode flow rules (SPEC §10): an adapter outside the engine.
#pragma once

#include <floodgate/chain/cluster_lease.hpp>
#include <floodgate/engine/engine.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace floodgate::cluster {

/// Adapter settings; the rest (endpoints, namespace, timeout) comes from the rules' `cluster:`.
struct redis_cluster_options {
  /// Used when the rule set's `cluster.redis` is empty (the demo's `--redis`).
  std::string default_redis;
  /// How often the client thread looks at the leases.
  std::chrono::milliseconds tick{2};
  /// This instance's name in the heartbeat set; empty: host name, process id and a random tag.
  std::string instance_id;
  /** Told, in a sentence, when Redis fails after answering (or at the first try) and when it
      answers again: the moments clusterMode rules leave their shared limits and come back. For
      logs (the demo prints them on stderr). Called on the adapter's thread; must not throw. */
  std::function<void(std::string_view)> on_event;
};

/// One clusterMode rule as the adapter sees it.
struct cluster_rule_status {
  std::string resource;
  std::string rule;  ///< the rule's name, else `flow[i]`
  cluster_mode mode = cluster_mode::global;
  double limit = 0;           ///< the shared count in force (avg_local: count x live instances)
  double fallback_count = 0;  ///< the local limit while falling back
  std::uint32_t lease = 0;    ///< passes held now
  std::uint64_t spent = 0;    ///< passes spent from leases
  std::string last_error;
};

/// Lease request outcomes, for metrics.
enum class lease_result : std::uint8_t { granted, exhausted, error, timeout };
inline constexpr std::size_t lease_result_count = 4;

/// The adapter's state, for the admin API and metrics (a copy).
struct redis_cluster_status {
  std::vector<std::string> endpoints;
  std::string state;  ///< idle (no cluster rules) | connecting | connected | down
  bool redis_cluster = false;  ///< the endpoints are a Redis Cluster (else one standalone server)
  std::string last_error;
  /// Live instances as the fallbacks count them: at least 2 until a first complete census, and
  /// after a reconnection not below the last count until every instance could announce itself.
  std::int64_t live_instances = 1;
  std::array<std::uint64_t, lease_result_count> lease_requests{};
  /// Round trips of lease requests: upper bounds in seconds, cumulative counts, sum, count.
  std::vector<double> round_trip_bounds;
  std::vector<std::uint64_t> round_trip_buckets;
  double round_trip_sum_seconds = 0;
  std::uint64_t round_trips = 0;
  std::uint64_t commands = 0;  ///< every command sent to Redis
  std::vector<cluster_rule_status> rules;
};

/** Feeds the engine's clusterMode rules with leases from Redis 7, standalone or Redis Cluster.

    A client thread of its own (hiredis, synchronous, every call bounded by `timeoutMs`) follows
    the rules in force (engine::for_each_cluster_rule), keeps each rule's lease filled with an
    atomic Lua script (EVALSHA, EVAL on NOSCRIPT), announces the instance with heartbeats, and
    switches rules to their fallback when Redis fails, reconnecting with capped exponential
    backoff. Request threads only ever touch the leases. A changed `cluster:` section reconnects.

    @par Thread Safety
    status() may be called from any thread. Destroying stops the thread (the leases stay with the
    engine, in their last mode).
*/
class redis_cluster {
 public:
  redis_cluster(engine& eng, redis_cluster_options options = {});
  ~redis_cluster();
  redis_cluster(const redis_cluster&) = delete;
  redis_cluster& operator=(const redis_cluster&) = delete;

  redis_cluster_status status() const;

  class impl;

 private:
  std::unique_ptr<impl> impl_;
};

/// `status` as the JSON object of admin `GET /floodgate/cluster`.
std::string status_json(const redis_cluster_status& status);

}  // namespace floodgate::cluster
