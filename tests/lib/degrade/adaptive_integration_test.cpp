// Adaptive breakers through the engine: drops are degrade blocks, the window is fed by exits and
// drops, and a reload keeps an unchanged rule's window and starts a changed one afresh.
#include "lib/degrade/degrade_test_support.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>

namespace floodgate {
namespace {

using test_support::degrade_engine;
using test_support::degrade_start_ms;

degrade_rule adaptive_rule(double k = 2.0) {
  degrade_rule r;
  r.resource = "backend";
  r.grade = degrade_grade::adaptive;
  r.k = k;
  r.min_request_amount = 5;
  r.stat_interval_ms = 10'000;
  return r;
}

adaptive_window_state window_of(const degrade_engine& d, std::size_t i = 0) {
  const std::optional<adaptive_window_state> s =
      d.breakers("backend").at(i)->adaptive(d.clock.now_ms());
  EXPECT_TRUE(s.has_value());
  return s.value_or(adaptive_window_state{});
}

/// Fails `n` requests through the engine (each passed one fails; drops count too).
void fail_requests(degrade_engine& d, int n) {
  for (int i = 0; i < n; ++i) {
    d.enter_exit_after("backend", 0, /*error=*/true);
  }
}

TEST(AdaptiveBreakerEngine, ListsTheBreakerAsAdaptiveWithItsWindow) {
  degrade_engine d;
  degrade_rule binary;
  binary.resource = "backend";
  binary.grade = degrade_grade::error_count;
  binary.count = 100;
  binary.time_window_sec = 10;
  ASSERT_TRUE(d.eng.load_rules({.degrade = {binary, adaptive_rule()}}));
  ASSERT_EQ(d.breakers("backend").size(), 2u);
  EXPECT_EQ(d.state("backend", 0), breaker_state::closed);
  EXPECT_FALSE(d.breakers("backend")[0]->adaptive(d.clock.now_ms()).has_value());
  EXPECT_EQ(d.state("backend", 1), breaker_state::adaptive);

  for (int i = 0; i < 6; ++i) d.enter_exit_after("backend", 1, /*error=*/i % 2 == 0);
  const adaptive_window_state s = window_of(d, 1);
  EXPECT_EQ(s.requests, 6u);
  EXPECT_EQ(s.accepts, 3u);
  EXPECT_DOUBLE_EQ(s.drop_ratio, 0.0);  // 6 - 2 * 3 = 0
}

TEST(AdaptiveBreakerEngine, ADropIsADegradeBlockWithTheRuleIndexAndOneSecondRetry) {
  degrade_engine d;
  ASSERT_TRUE(d.eng.load_rules({.degrade = {adaptive_rule(1.5)}}));
  fail_requests(d, 50);  // ratio 50 / 51 from the next bucket on
  d.clock.advance_ms(250);
  int blocked = 0;
  for (int i = 0; i < 100; ++i) {
    if (!d.enter_exit_after("backend", 0)) {
      ++blocked;
      EXPECT_EQ(d.last_block.reason, block_reason::degrade);
      EXPECT_EQ(d.last_block.rule_index, 0);
      EXPECT_EQ(d.last_block.retry_after, std::chrono::seconds{1});
    }
  }
  EXPECT_GT(blocked, 85);
  const adaptive_window_state s = window_of(d);
  EXPECT_EQ(s.requests, 150u);  // drops are requests too
  EXPECT_EQ(s.accepts, static_cast<std::uint64_t>(100 - blocked));
}

TEST(AdaptiveBreakerEngine, AReloadKeepsTheWindowOfAnUnchangedRule) {
  degrade_engine d;
  ASSERT_TRUE(d.eng.load_rules({.degrade = {adaptive_rule()}}));
  fail_requests(d, 20);
  const adaptive_window_state before = window_of(d);
  ASSERT_EQ(before.requests, 20u);

  // Another rule changes; this one does not.
  ASSERT_TRUE(d.eng.load_rules(
      {.flow = {{.resource = "backend", .count = 1000}}, .degrade = {adaptive_rule()}}));
  const adaptive_window_state after = window_of(d);
  EXPECT_EQ(after.requests, before.requests);
  EXPECT_EQ(after.accepts, before.accepts);
  EXPECT_DOUBLE_EQ(after.drop_ratio, 20.0 / 21.0);
}

TEST(AdaptiveBreakerEngine, AChangedRuleStartsWithAnEmptyWindow) {
  degrade_engine d;
  ASSERT_TRUE(d.eng.load_rules({.degrade = {adaptive_rule(2.0)}}));
  fail_requests(d, 20);
  ASSERT_EQ(window_of(d).requests, 20u);

  ASSERT_TRUE(d.eng.load_rules({.degrade = {adaptive_rule(3.0)}}));
  const adaptive_window_state s = window_of(d);
  EXPECT_EQ(s.requests, 0u);
  EXPECT_EQ(s.drop_ratio, 0.0);
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(d.enter_exit_after("backend", 0)) << "request " << i;
  }
}

TEST(AdaptiveBreakerEngine, RequestsBlockedByAnEarlierRuleAreNotTheBreakersRequests) {
  degrade_engine d;
  ASSERT_TRUE(d.eng.load_rules(
      {.flow = {{.resource = "backend", .count = 0}}, .degrade = {adaptive_rule()}}));
  for (int i = 0; i < 10; ++i) {
    EXPECT_FALSE(d.enter_exit_after("backend", 0));
    EXPECT_EQ(d.last_block.reason, block_reason::flow);
  }
  EXPECT_EQ(window_of(d).requests, 0u);
}

}  // namespace
}  // namespace floodgate
