// Flow rules: the plain configuration of the flow slot (SPEC §3, Sentinel's FlowRule).
#pragma once

#include <floodgate/rules/rule_error.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace floodgate {

enum class flow_grade : std::uint8_t { concurrency = 0, qps = 1 };
enum class flow_strategy : std::uint8_t { direct = 0, relate = 1, chain = 2 };
enum class control_behavior : std::uint8_t {
  reject = 0,
  warm_up = 1,
  throttling = 2,
  warm_up_throttling = 3
};

/** The largest `count` a flow rule accepts (a hundred billion a second: no real limit). Counts
    are compared with integer window sums, whose buckets hold 2^39 passes (weighted `acquire`
    included); a larger or infinite count is rejected with a clear error rather than converted
    past what they hold. */
inline constexpr double max_rule_count = 1e11;

/// What a cluster rule's `count` means (Sentinel's ClusterRuleConstant codes).
enum class cluster_threshold_type : std::uint8_t {
  avg_local = 0,  ///< `count` per instance: the fleet's limit is count x live instances
  global = 1,     ///< `count` across every instance
};

/** `clusterConfig` of a clusterMode flow rule (SPEC §10). */
struct flow_cluster_config {
  cluster_threshold_type threshold_type = cluster_threshold_type::global;
  /// Redis unreachable, slow or failing: enforce `fallback_count` locally (else pass).
  bool fallback_to_local_when_fail = true;
  /// The local limit while falling back; none: count / live instances (>= 1).
  std::optional<double> fallback_count;

  friend bool operator==(const flow_cluster_config&, const flow_cluster_config&) = default;
};

/** One flow rule, as written in the rule file. Plain value; equal rules keep their controller
    state across reloads. */
struct flow_rule {
  std::string name;                 ///< optional label for metrics and the admin API
  std::string resource;             ///< exact resource name, required
  flow_grade grade = flow_grade::qps;
  double count = 0;                 ///< qps: per second; concurrency: in flight
  std::string limit_app = "default";  ///< default | other | an origin
  flow_strategy strategy = flow_strategy::direct;
  std::string ref_resource;         ///< relate: the other resource; chain: the entrance name
  control_behavior behavior = control_behavior::reject;
  std::int32_t warm_up_period_sec = 10;
  std::int32_t max_queueing_time_ms = 500;
  bool dry_run = false;
  /// Holds `count` across every instance sharing the rule set's `cluster` Redis (QPS, reject,
  /// direct only).
  bool cluster_mode = false;
  flow_cluster_config cluster_config;

  friend bool operator==(const flow_rule&, const flow_rule&) = default;
};

/** Checks `rule` as Sentinel's rule manager does, appending every problem found to `errors`
    with paths prefixed by `path` (`flow[3]`). */
void validate(const flow_rule& rule, std::string_view path, std::vector<rule_error>& errors);

}  // namespace floodgate
