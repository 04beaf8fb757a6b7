// Circuit breaking through the engine: Sentinel's CircuitBreakingIntegrationTest and the degrade
// slot's part of the slot chain (blocks, retry-after, probes blocked later, racing threads).
#include "lib/degrade/degrade_test_support.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <thread>

namespace floodgate {
namespace {

using test_support::degrade_engine;
using test_support::degrade_rule_of;
using enum breaker_state;

constexpr std::string_view res = "circuit-breaking-res";

// Sentinel's testSlowRequestMode: max RT 50 ms, slow ratio 0.8, min 10, 20 s interval, 5 s window.
TEST(CircuitBreakingIntegration, SlowRequestModeOpensAtThirteenSlowOfSixteen) {
  degrade_engine h;
  ASSERT_TRUE(h.eng.load_rules(
      {.degrade = {degrade_rule_of(std::string(res), degrade_grade::slow_request_ratio, 50, 10,
                                   20'000, 5, 0.8)}}));
  for (int i = 0; i < 7; ++i) {
    EXPECT_TRUE(h.enter_exit_after(res, 60 + i));
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(h.enter_exit_after(res, 30 + i));
  }
  EXPECT_EQ(h.state(res), closed);  // 7/10 = 0.7
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(h.enter_exit_after(res, 60 + i));
  }
  EXPECT_EQ(h.state(res), closed);  // 12/15 = 0.8, not > 0.8
  EXPECT_TRUE(h.transitions.empty());
  EXPECT_TRUE(h.enter_exit_after(res, 65));  // 13/16 = 0.8125
  EXPECT_EQ(h.transitions,
            (std::vector<test_support::observed_transition>{{closed, open, 13.0 / 16.0}}));

  EXPECT_FALSE(h.enter_exit_after(res, 60));
  h.clock.advance_ms(1'000);
  EXPECT_FALSE(h.enter_exit_after(res, 60));
  h.clock.advance_ms(5'000);
  h.transitions.clear();
  EXPECT_TRUE(h.enter_exit_after(res, 60));  // a slow probe
  EXPECT_EQ(h.transitions, (std::vector<test_support::observed_transition>{
                               {open, half_open, std::nullopt}, {half_open, open, 1.0}}));

  h.clock.advance_ms(6'000);
  h.transitions.clear();
  EXPECT_TRUE(h.enter_exit_after(res, 30));  // a fast probe
  EXPECT_EQ(h.transitions, (std::vector<test_support::observed_transition>{
                               {open, half_open, std::nullopt}, {half_open, closed, std::nullopt}}));
  EXPECT_TRUE(h.enter_exit_after(res, 60));
  EXPECT_EQ(h.state(res), closed);
}

// Sentinel's testExceptionRatioMode: ratio 0.5, min 10, 25 s interval, 5 s window.
TEST(CircuitBreakingIntegration, ExceptionRatioModeOpensOnTheTenthCallAtSevenOfTen) {
  degrade_engine h;
  ASSERT_TRUE(h.eng.load_rules({.degrade = {degrade_rule_of(
                                    std::string(res), degrade_grade::error_ratio, 0.5, 10, 25'000, 5)}}));
  for (int i = 0; i < 6; ++i) {
    EXPECT_TRUE(h.enter_exit_after(res, 5 + i, true));
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(h.enter_exit_after(res, 5 + i));
  }
  EXPECT_EQ(h.state(res), closed);  // 9 < minRequestAmount
  EXPECT_TRUE(h.enter_exit_after(res, 7, true));  // 7/10 > 0.5
  EXPECT_EQ(h.state(res), open);
  EXPECT_EQ(h.transitions, (std::vector<test_support::observed_transition>{{closed, open, 0.7}}));

  EXPECT_FALSE(h.enter_exit_after(res, 5));
  h.clock.advance_ms(2'000);
  EXPECT_FALSE(h.enter_exit_after(res, 5));
  h.clock.advance_ms(5'000);
  EXPECT_TRUE(h.enter_exit_after(res, 5, true));  // a failing probe
  EXPECT_EQ(h.state(res), open);
  h.clock.advance_ms(6'000);
  EXPECT_TRUE(h.enter_exit_after(res, 5));  // a good probe
  EXPECT_EQ(h.state(res), closed);
  EXPECT_TRUE(h.enter_exit_after(res, 5, true));
  EXPECT_EQ(h.state(res), closed);
}

// Sentinel's testMultipleHalfOpenedBreakers: two RT rules with 2 s and 4 s windows, min 1.
TEST(CircuitBreakingIntegration, AProbeBlockedByALaterBreakerFallsBackToOpen) {
  degrade_engine h;
  ASSERT_TRUE(h.eng.load_rules(
      {.degrade = {
           degrade_rule_of(std::string(res), degrade_grade::slow_request_ratio, 50, 1, 20'000, 2),
           degrade_rule_of(std::string(res), degrade_grade::slow_request_ratio, 50, 1, 20'000, 4)}}));
  EXPECT_TRUE(h.enter_exit_after(res, 100));
  EXPECT_EQ(h.state(res, 0), open);
  EXPECT_EQ(h.state(res, 1), open);

  h.clock.advance_ms(3'000);
  for (int i = 0; i < 10; ++i) {
    EXPECT_FALSE(h.enter_exit_after(res, 10));
    EXPECT_EQ(h.last_block.rule_index, 1);
  }
  const auto breakers = h.breakers(res);
  EXPECT_EQ(breakers[0]->state(), open);
  EXPECT_EQ(breakers[1]->state(), open);
  EXPECT_EQ(breakers[0]->transitions(open, half_open), 10u);
  EXPECT_EQ(breakers[0]->transitions(half_open, open), 10u);
  EXPECT_EQ(breakers[1]->transitions(open, half_open), 0u);

  h.clock.advance_ms(3'000);
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(h.enter_exit_after(res, 10));
  }
  EXPECT_EQ(h.state(res, 0), closed);
  EXPECT_EQ(h.state(res, 1), closed);
}

// entry_tokens has 32 probe bits; breakers past the 31st share the last one.
TEST(CircuitBreakingIntegration, ProbesOfMoreThanThirtyTwoBreakersAreAllRevertedWhenBlocked) {
  constexpr int quick = 40;
  degrade_engine h;
  rule_set rules;
  for (int i = 0; i < quick; ++i) {
    rules.degrade.push_back(
        degrade_rule_of(std::string(res), degrade_grade::error_count, 0, 1, 1'000, 1));
  }
  rules.degrade.push_back(
      degrade_rule_of(std::string(res), degrade_grade::error_count, 0, 1, 1'000, 5));
  ASSERT_TRUE(h.eng.load_rules(rules));
  EXPECT_TRUE(h.enter_exit_after(res, 5, true));
  h.clock.advance_ms(1'000);

  EXPECT_FALSE(h.enter_exit_after(res, 5));
  EXPECT_EQ(h.last_block.rule_index, quick);
  const auto breakers = h.breakers(res);
  for (int i = 0; i <= quick; ++i) {
    EXPECT_EQ(breakers[i]->state(), open) << "breaker " << i;
  }
  EXPECT_EQ(breakers[quick - 1]->transitions(half_open, open), 1u);
}

TEST(CircuitBreakingIntegration, ABlockCarriesReasonSectionIndexAndTimeUntilTheProbe) {
  degrade_engine h;
  ASSERT_TRUE(h.eng.load_rules(
      {.degrade = {degrade_rule_of("other", degrade_grade::error_count, 0, 1, 1'000, 10),
                   degrade_rule_of(std::string(res), degrade_grade::error_count, 0, 1, 1'000, 10)}}));
  EXPECT_TRUE(h.enter_exit_after(res, 5, true));
  h.clock.advance_ms(2'500);
  EXPECT_FALSE(h.enter_exit_after(res, 5));
  EXPECT_EQ(h.last_block.reason, block_reason::degrade);
  EXPECT_EQ(h.last_block.rule_index, 1);
  EXPECT_EQ(h.last_block.retry_after, std::chrono::milliseconds{7'500});
  EXPECT_TRUE(h.enter_exit_after("other", 5));  // breakers are per resource
}

TEST(CircuitBreakingIntegration, WhileAProbeRunsEveryoneElseIsBlockedAndToldToRetryInOneSecond) {
  degrade_engine h;
  ASSERT_TRUE(h.eng.load_rules({.degrade = {degrade_rule_of(
                                    std::string(res), degrade_grade::error_count, 0, 1, 1'000, 1)}}));
  EXPECT_TRUE(h.enter_exit_after(res, 5, true));
  h.clock.advance_ms(1'000);
  context probe_ctx{h.eng, "probe"};
  entry probe = h.eng.enter(probe_ctx, res);
  ASSERT_TRUE(probe);
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(h.enter_exit_after(res, 5));
    EXPECT_EQ(h.last_block.retry_after, std::chrono::seconds{1});
  }
  probe.exit();  // a good probe closes the breaker
  EXPECT_TRUE(h.enter_exit_after(res, 5));
}

TEST(CircuitBreakingIntegration, OnlyTracedErrorsCount) {
  degrade_engine h;
  ASSERT_TRUE(h.eng.load_rules({.degrade = {degrade_rule_of(
                                    std::string(res), degrade_grade::error_count, 2, 1, 60'000, 1)}}));
  for (int i = 0; i < 50; ++i) {
    EXPECT_TRUE(h.enter_exit_after(res, 5));
  }
  EXPECT_TRUE(h.enter_exit_after(res, 5, true));
  EXPECT_TRUE(h.enter_exit_after(res, 5, true));
  EXPECT_EQ(h.state(res), closed);
  EXPECT_TRUE(h.enter_exit_after(res, 5, true));
  EXPECT_EQ(h.state(res), open);
}

/// A user slot after the degrade slot that blocks while `blocking` is set.
class switch_slot final : public slot {
 public:
  int order() const noexcept override { return 0; }
  slot_verdict on_entry(const check_context&) noexcept override {
    if (blocking.load()) {
      return slot_verdict::blocked({});
    }
    return slot_verdict::pass();
  }
  std::atomic<bool> blocking{false};
};

TEST(CircuitBreakingIntegration, AProbeBlockedByALaterSlotRevertsWithoutMovingTheProbeTime) {
  degrade_engine h;
  auto later = std::make_shared<switch_slot>();
  h.eng.add_slot(later);
  ASSERT_TRUE(h.eng.load_rules({.degrade = {degrade_rule_of(
                                    std::string(res), degrade_grade::error_count, 0, 1, 1'000, 5)}}));
  EXPECT_TRUE(h.enter_exit_after(res, 5, true));
  const std::int64_t retry_at = h.breakers(res)[0]->next_retry_ms();
  h.clock.set_ms(retry_at);

  later->blocking = true;
  EXPECT_FALSE(h.enter_exit_after(res, 5));
  EXPECT_EQ(h.last_block.reason, block_reason::custom);
  EXPECT_EQ(h.state(res), open);
  EXPECT_EQ(h.breakers(res)[0]->next_retry_ms(), retry_at);

  later->blocking = false;
  EXPECT_TRUE(h.enter_exit_after(res, 5));  // the next request probes at once
  EXPECT_EQ(h.state(res), closed);
}

TEST(CircuitBreakingIntegration, ThreadsRacingAnElapsedOpenBreakerAdmitExactlyOneProbe) {
  constexpr int threads = 8;
  degrade_engine h;
  ASSERT_TRUE(h.eng.load_rules({.degrade = {degrade_rule_of(
                                    std::string(res), degrade_grade::error_count, 0, 1, 1'000, 1)}}));
  for (int round = 0; round < 50; ++round) {
    ASSERT_TRUE(h.enter_exit_after(res, 5, true));
    ASSERT_EQ(h.state(res), open);
    h.clock.advance_ms(1'000);
    std::atomic<int> passed{0};
    std::barrier entered(threads);
    std::vector<std::jthread> racers;
    for (int t = 0; t < threads; ++t) {
      racers.emplace_back([&] {
        context ctx{h.eng, "racer"};
        entered.arrive_and_wait();
        entry e = h.eng.enter(ctx, res);
        if (e) {
          passed.fetch_add(1);
        }
        entered.arrive_and_wait();  // the probe stays in flight until everyone has tried
      });
    }
    racers.clear();
    ASSERT_EQ(passed.load(), 1) << "round " << round;
    ASSERT_EQ(h.state(res), closed);  // the probe exited cleanly
  }
}

}  // namespace
}  // namespace floodgate
