// Hot-parameter rule validation: Sentinel's ParamFlowRuleUtil.isValidRule, reported field by field.
#include <floodgate/rules/param_flow_rule.hpp>

#include <cmath>
#include <string>

namespace floodgate {

namespace {

bool non_negative(double v) noexcept { return v >= 0 && std::isfinite(v); }

}  // namespace

void validate(const param_flow_rule& rule, std::string_view path, std::vector<rule_error>& errors) {
  const std::string p(path);
  if (rule.resource.empty()) {
    errors.push_back({p + ".resource", "must not be empty"});
  }
  if (rule.param && rule.param_idx) {
    errors.push_back({p + ".paramIdx", "must not be set together with param"});
  } else if (!rule.param && !rule.param_idx) {
    errors.push_back({p + ".param", "one of param and paramIdx is required"});
  }
  if (rule.param && rule.param->name.empty() &&
      (rule.param->from == param_source::header || rule.param->from == param_source::query)) {
    errors.push_back({p + ".param.name", "is required for header and query"});
  }
  if (!non_negative(rule.count)) {
    errors.push_back({p + ".count", "must be >= 0"});
  }
  if (rule.burst_count < 0) {
    errors.push_back({p + ".burstCount", "must be >= 0"});
  }
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
    if (!non_negative(rule.items[i].count)) {
      errors.push_back({p + ".items[" + std::to_string(i) + "].count", "must be >= 0"});
    }
  }
}

}  // namespace floodgate
