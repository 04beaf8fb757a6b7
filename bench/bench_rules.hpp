// What the benchmarks share (entry_bench.cpp, hot_keys_bench.cpp, paired_slices.cpp,
// cold_entry.cpp): the rules,
// so that a case of one names the same configuration as the case of another; the parameter
// values each thread enters with; the compute control's step.
#pragma once

#include <floodgate/rules/degrade_rule.hpp>
#include <floodgate/rules/flow_rule.hpp>
#include <floodgate/rules/hot_keys_rule.hpp>
#include <floodgate/rules/param_flow_rule.hpp>
#include <floodgate/rules/rule_set.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

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

/// SPEC §7's entry case: a QPS rule never reached and the slow-ratio breaker, on "GET:/hello".
inline rule_set qps_and_breaker() {
  return {.flow = {qps_rule(unlimited)}, .degrade = {slow_breaker()}};
}

/// Issue 19's adaptive (Google SRE) breaker; every request succeeds, so it never drops.
inline degrade_rule adaptive_breaker() {
  return {.resource = "GET:/hello",
          .grade = degrade_grade::adaptive,
          .min_request_amount = 5,
          .stat_interval_ms = 10'000,
          .k = 2};
}

/// A paramFlow rule on `GET:/users/{id}`'s first argument that never blocks.
inline param_flow_rule param_rule() {
  return {.resource = "GET:/users/{id}", .param_idx = 0, .count = unlimited};
}

/// A hotKeys rule on the same argument (a top: 20 rule: 512 summary slots a bucket).
inline hot_keys_rule hot_rule() {
  return {
      .resource = "GET:/users/{id}", .param_idx = 0, .window_sec = 5, .top = 20, .threshold = 100};
}

/// Values of the parameter benchmarks: thread t enters with the `values_per_thread` from
/// t * values_per_thread, so no two threads share a value.
constexpr std::size_t values_per_thread = 128;
constexpr std::size_t max_threads = 2;
inline const std::array<std::string, values_per_thread * max_threads>& value_texts() {
  static const auto texts = [] {
    std::array<std::string, values_per_thread * max_threads> t;
    for (std::size_t i = 0; i < t.size(); ++i) t[i] = "user-" + std::to_string(i);
    return t;
  }();
  return texts;
}

/// The compute control's unit of work: eight rounds of eight independent xorshift chains
/// (several instructions a cycle, nothing in memory but the chains).
inline void xorshift_rounds(std::uint64_t (&chain)[8]) {
  for (int step = 0; step < 8; ++step) {
    for (auto& x : chain) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
    }
  }
}

}  // namespace floodgate::bench
