// An engine on a manual clock with Sentinel's AbstractTimeBasedTest helpers, for the degrade
// integration tests.
#pragma once

#include <floodgate/engine/engine.hpp>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace floodgate::test_support {

/// The clock starts on a boundary of every statIntervalMs used in the tests.
inline constexpr std::int64_t degrade_start_ms = 1'000'000;

inline degrade_rule degrade_rule_of(std::string resource, degrade_grade grade, double count,
                                    std::int32_t min_request, std::int32_t stat_interval_ms,
                                    std::int32_t time_window_sec, double slow_ratio = 1.0) {
  degrade_rule r;
  r.resource = std::move(resource);
  r.grade = grade;
  r.count = count;
  r.slow_ratio_threshold = slow_ratio;
  r.min_request_amount = min_request;
  r.stat_interval_ms = stat_interval_ms;
  r.time_window_sec = time_window_sec;
  return r;
}

/// One observed state change.
struct observed_transition {
  breaker_state from;
  breaker_state to;
  std::optional<double> value;
  friend bool operator==(const observed_transition&, const observed_transition&) = default;
};

/// An engine whose clock only moves when told, recording every breaker transition.
struct degrade_engine {
  degrade_engine() {
    eng.add_breaker_observer([this](breaker_state from, breaker_state to, const degrade_rule&,
                                    std::optional<double> value) {
      transitions.push_back({from, to, value});
    });
  }

  /// Enters `resource`, moves the manual clock by `ms`, traces an error if asked, exits. False when blocked
  /// (the block is kept in `last_block`).
  bool enter_exit_after(std::string_view resource, std::int64_t ms, bool error = false) {
    context ctx{eng, "test"};
    entry e = eng.enter(ctx, resource);
    if (!e) {
      last_block = e.block();
      return false;
    }
    clock.advance_ms(ms);
    if (error) {
      e.trace_error();
    }
    e.exit();
    return true;
  }

  /// The breakers of `resource`, in rule order.
  std::vector<const circuit_breaker*> breakers(std::string_view resource) const {
    std::vector<const circuit_breaker*> out;
    eng.for_each_breaker([&](std::string_view r, const circuit_breaker& b, std::int32_t) {
      if (r == resource) {
        out.push_back(&b);
      }
    });
    return out;
  }

  breaker_state state(std::string_view resource, std::size_t i = 0) const {
    return breakers(resource).at(i)->state();
  }

  manual_clock clock{degrade_start_ms};
  engine eng{engine_options{.time = &clock}};
  std::vector<observed_transition> transitions;  // request threads of single-threaded tests only
  block_info last_block{};
};

}  // namespace floodgate::test_support
