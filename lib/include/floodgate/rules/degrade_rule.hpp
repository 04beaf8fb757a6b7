// Degrade (circuit-breaker) rules: SPEC §3, Sentinel's DegradeRule.
#pragma once

#include <floodgate/rules/rule_error.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace floodgate {

enum class degrade_grade : std::uint8_t { slow_request_ratio = 0, error_ratio = 1, error_count = 2 };

/** One circuit-breaker rule. Plain value; a breaker whose rule is unchanged by a reload keeps its
    state and statistics. */
struct degrade_rule {
  std::string name;
  std::string resource;
  degrade_grade grade = degrade_grade::slow_request_ratio;
  double count = 0;                  ///< slow: max RT in ms; error_ratio: 0..1; error_count
  double slow_ratio_threshold = 1.0; ///< slow_request_ratio only, 0..1
  std::int32_t min_request_amount = 5;
  std::int32_t stat_interval_ms = 1000;
  std::int32_t time_window_sec = 0;  ///< seconds OPEN before one probe (> 0)

  friend bool operator==(const degrade_rule&, const degrade_rule&) = default;
};

/** Checks `rule` as Sentinel's rule manager does, appending every problem found to `errors`
    with paths prefixed by `path` (`degrade[3]`). */
void validate(const degrade_rule& rule, std::string_view path, std::vector<rule_error>& errors);

}  // namespace floodgate
