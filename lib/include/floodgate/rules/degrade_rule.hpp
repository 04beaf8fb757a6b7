// Degrade (circuit-breaker) rules: SPEC §3, Sentinel's DegradeRule.
#pragma once

#include <floodgate/rules/rule_error.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace floodgate {

/** What a breaker trips on. The first three are Sentinel's binary breakers (CLOSED / OPEN /
    HALF_OPEN); `adaptive` is floodgate's own: Google SRE client-side throttling, which drops a
    share of the requests instead of all of them (its code 3 is not a Sentinel code). */
enum class degrade_grade : std::uint8_t {
  slow_request_ratio = 0,
  error_ratio = 1,
  error_count = 2,
  adaptive = 3
};

/// The window of an adaptive rule whose file gives no `statIntervalMs` (go-zero's 10 s).
inline constexpr std::int32_t adaptive_default_stat_interval_ms = 10'000;

/** One circuit-breaker rule. Plain value; a breaker whose rule is unchanged by a reload keeps its
    state and statistics.

    Grade `adaptive` drops each request with probability
    `max(0, (requests - k * accepts) / (requests + 1))` over the last `stat_interval_ms`, and
    never below `min_request_amount` requests in that window; `count`, `slow_ratio_threshold` and
    `time_window_sec` do not apply to it (leave them at their defaults), and `k` applies to it
    only. Rule files default `statIntervalMs` to adaptive_default_stat_interval_ms for it; set
    `stat_interval_ms` yourself when building the rule in code. */
struct degrade_rule {
  std::string name;
  std::string resource;
  degrade_grade grade = degrade_grade::slow_request_ratio;
  double count = 0;                  ///< slow: max RT in ms; error_ratio: 0..1; error_count
  double slow_ratio_threshold = 1.0; ///< slow_request_ratio only, 0..1
  std::int32_t min_request_amount = 5;
  std::int32_t stat_interval_ms = 1000;
  std::int32_t time_window_sec = 0;  ///< seconds OPEN before one probe (> 0)
  double k = 2.0;                    ///< adaptive only: accept multiplier (> 1; lower sheds more)

  friend bool operator==(const degrade_rule&, const degrade_rule&) = default;
};

/** Checks `rule` as Sentinel's rule manager does, appending every problem found to `errors`
    with paths prefixed by `path` (`degrade[3]`). */
void validate(const degrade_rule& rule, std::string_view path, std::vector<rule_error>& errors);

}  // namespace floodgate
