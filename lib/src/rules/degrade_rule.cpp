// Degrade-rule validation: Sentinel's DegradeRuleManager.isValidRule, reported field by field.
#include <floodgate/rules/degrade_rule.hpp>

#include <cmath>
#include <string>

namespace floodgate {

void validate(const degrade_rule& rule, std::string_view path, std::vector<rule_error>& errors) {
  const auto fail = [&](std::string_view field, std::string message) {
    errors.push_back({std::string(path) + "." + std::string(field), std::move(message)});
  };
  if (rule.resource.empty()) {
    fail("resource", "must not be empty");
  }
  const bool known_grade = rule.grade == degrade_grade::slow_request_ratio ||
                           rule.grade == degrade_grade::error_ratio ||
                           rule.grade == degrade_grade::error_count;
  if (!known_grade) {
    fail("grade", "must be slow_request_ratio, error_ratio or error_count");
  }
  // Comparisons are written so that NaN fails them.
  if (!std::isfinite(rule.count)) {
    fail("count", "must be a finite number");
  } else if (rule.grade == degrade_grade::error_ratio && !(rule.count >= 0 && rule.count <= 1)) {
    fail("count", "must be between 0 and 1 for error_ratio");
  } else if (!(rule.count >= 0)) {
    fail("count", "must be >= 0");
  }
  if (rule.grade == degrade_grade::slow_request_ratio &&
      !(rule.slow_ratio_threshold >= 0 && rule.slow_ratio_threshold <= 1)) {
    fail("slowRatioThreshold", "must be between 0 and 1");
  }
  if (rule.min_request_amount <= 0) {
    fail("minRequestAmount", "must be > 0");
  }
  if (rule.stat_interval_ms <= 0) {
    fail("statIntervalMs", "must be > 0");
  }
  if (rule.time_window_sec <= 0) {
    fail("timeWindow", "must be > 0");
  }
}

}  // namespace floodgate
