// Flow rule validation: Sentinel's FlowRuleUtil.isValidRule, reported instead of dropped.
#include <floodgate/rules/flow_rule.hpp>

#include "rules/blank.hpp"

#include <string>

namespace floodgate {

namespace {

using rules_detail::is_blank;

/// What cluster flow control supports today: QPS rules that reject, on the resource itself.
template <class Add>
void validate_cluster_mode(const flow_rule& rule, const Add& add) {
  if (rule.grade != flow_grade::qps) {
    add("clusterMode", "needs grade qps (cluster concurrency limits are not supported)");
  }
  if (rule.behavior != control_behavior::reject) {
    add("clusterMode", "needs controlBehavior reject (cluster warm-up/throttling are not supported)");
  }
  if (rule.strategy != flow_strategy::direct) {
    add("clusterMode", "needs strategy direct");
  }
  if (rule.dry_run) {
    add("clusterMode", "cannot be combined with dryRun");
  }
  const auto& c = rule.cluster_config;
  if (c.threshold_type != cluster_threshold_type::global &&
      c.threshold_type != cluster_threshold_type::avg_local) {
    add("clusterConfig.thresholdType", "must be global or avg_local");
  }
  if (c.fallback_count && !(*c.fallback_count >= 0)) {
    add("clusterConfig.fallbackCount", "must be >= 0");
  } else if (c.fallback_count && !(*c.fallback_count <= max_rule_count)) {
    add("clusterConfig.fallbackCount", "must be at most 1e11, as count");
  }
}

}  // namespace

void validate(const flow_rule& rule, std::string_view path, std::vector<rule_error>& errors) {
  const auto add = [&](std::string_view key, std::string_view message) {
    std::string p(path);
    p.append(".").append(key);
    errors.push_back({std::move(p), std::string(message)});
  };
  if (is_blank(rule.resource)) {
    add("resource", "must not be empty");
  }
  if (rule.grade != flow_grade::qps && rule.grade != flow_grade::concurrency) {
    add("grade", "must be qps or concurrency");
  }
  if (!(rule.count >= 0)) {
    add("count", "must be >= 0");
  } else if (!(rule.count <= max_rule_count)) {
    add("count", "must be at most 1e11 (for no limit, leave the rule out)");
  }
  switch (rule.strategy) {
    case flow_strategy::direct:
      break;
    case flow_strategy::relate:
    case flow_strategy::chain:
      if (is_blank(rule.ref_resource)) {
        add("refResource", rule.strategy == flow_strategy::relate
                               ? "is required when strategy is relate"
                               : "is required when strategy is chain");
      }
      break;
    default:
      add("strategy", "must be direct, relate or chain");
  }
  const bool warms = rule.behavior == control_behavior::warm_up ||
                     rule.behavior == control_behavior::warm_up_throttling;
  if (warms && rule.warm_up_period_sec <= 0) {
    add("warmUpPeriodSec", "must be > 0");
  } else if (rule.warm_up_period_sec < 0) {
    add("warmUpPeriodSec", "must be >= 0");  // unused without warm-up, but never meaningful
  }
  if (rule.max_queueing_time_ms < 0) {
    add("maxQueueingTimeMs", "must be >= 0");
  }
  switch (rule.behavior) {
    case control_behavior::reject:
      break;
    case control_behavior::warm_up:
    case control_behavior::throttling:
    case control_behavior::warm_up_throttling:
      if (rule.behavior != control_behavior::warm_up && rule.max_queueing_time_ms == 0) {
        add("maxQueueingTimeMs", "must be > 0 for throttling");
      }
      if (rule.grade == flow_grade::concurrency) {
        add("controlBehavior", "must be reject for concurrency rules");
      }
      break;
    default:
      add("controlBehavior", "must be reject, warm_up, throttling or warm_up_throttling");
  }
  if (rule.cluster_mode) {
    validate_cluster_mode(rule, add);
  }
}

}  // namespace floodgate
