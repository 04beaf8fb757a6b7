// The rules the entry benchmarks share (entry_bench.cpp, paired_slices.cpp), so that a case of
// one names the same configuration as the case of the other.
#pragma once

#include <floodgate/rules/degrade_rule.hpp>
#include <floodgate/rules/flow_rule.hpp>

namespace floodgate::bench {

/// A limit no benchmark reaches: the pass path.
constexpr double unlimited = 1e12;

inline flow_rule qps_rule(double count) { return {.resource = "GET:/hello", .count = count}; }

/// SPEC §7's breaker: slow-ratio, 200 ms, never tripped by the benchmarks' entries.
inline degrade_rule slow_breaker() {
  return {.resource = "GET:/hello",
          .count = 200,
          .slow_ratio_threshold = 0.5,
          .min_request_amount = 5,
          .stat_interval_ms = 1000,
          .time_window_sec = 10};
}

/// Issue 19's adaptive (Google SRE) breaker; every request succeeds, so it never drops.
inline degrade_rule adaptive_breaker() {
  return {.resource = "GET:/hello",
          .grade = degrade_grade::adaptive,
          .min_request_amount = 5,
          .stat_interval_ms = 10'000,
          .k = 2};
}

}  // namespace floodgate::bench
