// Degrade-rule validation: Sentinel's DegradeRuleManager.isValidRule, reported field by field,
// plus floodgate's adaptive grade.
#include <floodgate/rules/degrade_rule.hpp>

#include <cmath>
#include <string>

namespace floodgate {

void validate(const degrade_rule& rule, std::string_view path, std::vector<rule_error>& errors) {
  const auto fail = [&](std::string_view field, std::string message) {
    errors.push_back({std::string(path) + "." + std::string(field), std::move(message)});
  };
  const degrade_rule defaults;
  // An adaptive rule has no threshold and is never OPEN: a count, slow-ratio threshold or time
  // window set on it would do nothing, so it is reported rather than ignored (as is `k` on the
  // other grades).
  const bool adaptive = rule.grade == degrade_grade::adaptive;
  const auto not_adaptive = [&](std::string_view field) {
    fail(field, "does not apply to grade adaptive");
  };

  if (rule.resource.empty()) {
    fail("resource", "must not be empty");
  }
  const bool known_grade = adaptive || rule.grade == degrade_grade::slow_request_ratio ||
                           rule.grade == degrade_grade::error_ratio ||
                           rule.grade == degrade_grade::error_count;
  if (!known_grade) {
    fail("grade", "must be slow_request_ratio, error_ratio, error_count or adaptive");
  }
  // Comparisons are written so that NaN fails them.
  if (adaptive) {
    if (!(rule.count == defaults.count)) not_adaptive("count");
  } else if (!std::isfinite(rule.count)) {
    fail("count", "must be a finite number");
  } else if (rule.grade == degrade_grade::error_ratio && !(rule.count >= 0 && rule.count <= 1)) {
    fail("count", "must be between 0 and 1 for error_ratio");
  } else if (!(rule.count >= 0)) {
    fail("count", "must be >= 0");
  }
  if (adaptive) {
    if (!(rule.slow_ratio_threshold == defaults.slow_ratio_threshold)) {
      not_adaptive("slowRatioThreshold");
    }
  } else if (rule.grade == degrade_grade::slow_request_ratio &&
             !(rule.slow_ratio_threshold >= 0 && rule.slow_ratio_threshold <= 1)) {
    fail("slowRatioThreshold", "must be between 0 and 1");
  }
  if (rule.min_request_amount <= 0) {
    fail("minRequestAmount", "must be > 0");
  }
  if (rule.stat_interval_ms <= 0) {
    fail("statIntervalMs", "must be > 0");
  }
  if (adaptive) {
    if (rule.time_window_sec != defaults.time_window_sec) not_adaptive("timeWindow");
  } else if (rule.time_window_sec <= 0) {
    fail("timeWindow", "must be > 0");
  }
  if (adaptive) {
    if (!(rule.k > 1 && std::isfinite(rule.k))) fail("k", "must be a finite number > 1");
  } else if (known_grade && !(rule.k == defaults.k)) {
    fail("k", "applies to grade adaptive only");
  }
}

}  // namespace floodgate
