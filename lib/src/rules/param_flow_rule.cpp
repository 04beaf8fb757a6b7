// Hot-parameter rule validation: Sentinel's ParamFlowRuleUtil.isValidRule, reported field by field.
#include <floodgate/rules/param_flow_rule.hpp>

#include "rules/param_choice.hpp"

#include <cmath>
#include <string>

namespace floodgate {

namespace {

bool non_negative(double v) noexcept { return v >= 0 && std::isfinite(v); }

void check_count(double count, const std::string& path, std::vector<rule_error>& errors) {
  if (!non_negative(count) && !(count > max_param_count)) {
    errors.push_back({path, "must be >= 0"});
  } else if (!(count <= max_param_count)) {
    errors.push_back({path, "must be at most 67108863 (for no limit, leave the rule out)"});
  }
}

}  // namespace

void validate(const param_flow_rule& rule, std::string_view path, std::vector<rule_error>& errors) {
  const std::string p(path);
  if (rule.resource.empty()) {
    errors.push_back({p + ".resource", "must not be empty"});
  }
  rules_detail::validate_param_choice(rule.param, rule.param_idx, p, errors);
  check_count(rule.count, p + ".count", errors);
  // A QPS rule that rejects gives each value a bucket of count + burstCount tokens (the others
  // ignore burstCount), which must fit the token word too, for the rule's count and each item's.
  const bool bucket = rule.grade == flow_grade::qps && rule.behavior == control_behavior::reject;
  const auto check_bucket = [&](double count, const std::string& at) {
    if (bucket && rule.burst_count >= 0 && count <= max_param_count &&
        count + rule.burst_count > max_param_count) {
      errors.push_back({at, "with burstCount " + std::to_string(rule.burst_count) +
                                " must be at most 67108863"});
    }
  };
  if (rule.burst_count < 0) {
    errors.push_back({p + ".burstCount", "must be >= 0"});
  }
  check_bucket(rule.count, p + ".count");
  if (rule.duration_in_sec <= 0) {
    errors.push_back({p + ".durationInSec", "must be > 0"});
  }
  if (rule.behavior != control_behavior::reject && rule.behavior != control_behavior::throttling) {
    errors.push_back({p + ".controlBehavior", "must be reject or throttling"});
  }
  if (rule.max_queueing_time_ms < 0) {
    errors.push_back({p + ".maxQueueingTimeMs", "must be >= 0"});
  }
  for (std::size_t i = 0; i < rule.items.size(); ++i) {
    const std::string at = p + ".items[" + std::to_string(i) + "].count";
    check_count(rule.items[i].count, at, errors);
    check_bucket(rule.items[i].count, at);
    if (std::isfinite(rule.items[i].count) &&
        std::trunc(rule.items[i].count) != rule.items[i].count) {
      errors.push_back({at, "must be an integer"});  // Sentinel's ParamFlowItem count: Integer
    }
  }
}

}  // namespace floodgate
