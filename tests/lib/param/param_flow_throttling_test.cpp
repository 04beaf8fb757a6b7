// Hot-parameter throttling (Sentinel's ParamFlowThrottleRateLimitingCheckerTest) and per-value
// concurrency.
#include "param/param_slot.hpp"

#include "lib/support/slot_harness.hpp"

#include <gtest/gtest.h>

#include <array>

namespace floodgate {
namespace {

using test_support::slot_harness;
constexpr auto pass = slot_verdict::kind::pass;
constexpr auto block = slot_verdict::kind::block;
constexpr auto wait = slot_verdict::kind::wait;

std::unique_ptr<resource_param_rules> build(std::vector<param_flow_rule> rules) {
  std::vector<indexed_rule<param_flow_rule>> indexed;
  for (std::size_t i = 0; i < rules.size(); ++i) {
    indexed.push_back({rules[i], static_cast<std::int32_t>(i)});
  }
  return resource_param_rules::build(std::move(indexed), nullptr, true);
}

param_flow_rule throttling(double count, std::int32_t max_queueing_ms) {
  param_flow_rule r;
  r.resource = "res";
  r.param_idx = 0;
  r.count = count;
  r.behavior = control_behavior::throttling;
  r.max_queueing_time_ms = max_queueing_ms;
  return r;
}

param_flow_rule concurrency(double count) {
  param_flow_rule r;
  r.resource = "res";
  r.param_idx = 0;
  r.grade = flow_grade::concurrency;
  r.count = count;
  return r;
}

slot_verdict check(const resource_param_rules& r, slot_harness& h, param_value v,
                   entry_tokens& tokens) {
  const std::array<param_value, 1> args{v};
  return r.check(h.check({}, entry_type::inbound, args), tokens);
}

slot_verdict check(const resource_param_rules& r, slot_harness& h, param_value v) {
  entry_tokens tokens;
  return check(r, h, v, tokens);
}

TEST(ParamFlowThrottling, ExactlyCountPassesPerSecondInABusyLoop) {
  slot_harness h;
  const auto r = build({throttling(5, 0)});
  int passes = 0;
  for (int ms = 0; ms < 1000; ++ms, h.time.advance_ms(1)) {
    const auto v = check(*r, h, "v");
    ASSERT_NE(v.outcome, wait);
    passes += v.outcome == pass ? 1 : 0;
  }
  EXPECT_EQ(passes, 5);
}

TEST(ParamFlowThrottling, QueuesWithinMaxQueueingTimeAsWaits) {
  slot_harness h;
  const auto r = build({throttling(10, 500)});
  EXPECT_EQ(check(*r, h, "v").outcome, pass);
  for (int i = 1; i <= 4; ++i) {
    const auto v = check(*r, h, "v");
    ASSERT_EQ(v.outcome, wait);
    EXPECT_EQ(v.wait_ns, i * 100'000'000LL);
  }
  const auto v = check(*r, h, "v");  // would wait 500 ms: not < maxQueueingTimeMs
  ASSERT_EQ(v.outcome, block);
  EXPECT_EQ(v.block.reason, block_reason::param_flow);
  EXPECT_EQ(v.block.retry_after, std::chrono::milliseconds(1));
  EXPECT_EQ(check(*r, h, "other").outcome, pass) << "each value is spaced on its own";
}

TEST(ParamFlowThrottling, AnIdleValuePassesAtOnceWithoutCredit) {
  slot_harness h;
  const auto r = build({throttling(10, 0)});
  EXPECT_EQ(check(*r, h, "v").outcome, pass);
  h.time.advance_ms(5000);
  EXPECT_EQ(check(*r, h, "v").outcome, pass);
  EXPECT_EQ(check(*r, h, "v").outcome, block) << "idle time is not saved up";
}

TEST(ParamFlowThrottling, AHugeAcquireIsSpacedFarApartNotLetThrough) {
  // 1 token per 3 s, 2^32 - 1 of them at once: the cost (about 4e19 ns) overflowed a signed
  // 64-bit rounding, came out negative, and let every request pass.
  slot_harness h;
  auto rule = throttling(1, 500);
  rule.duration_in_sec = 3;
  const auto r = build({rule});
  const std::array<param_value, 1> args{"v"};
  const auto huge = [&] {
    entry_tokens tokens;
    return r->check(h.check({}, entry_type::inbound, args, 0xffff'ffffu), tokens);
  };
  EXPECT_EQ(huge().outcome, pass) << "a value's first request passes, as in Sentinel";
  for (int i = 0; i < 4; ++i) {
    const auto v = huge();
    ASSERT_EQ(v.outcome, block);
    EXPECT_GT(v.block.retry_after, std::chrono::hours(24 * 365));
  }
}

TEST(ParamFlowThrottling, ZeroCountBlocks) {
  slot_harness h;
  EXPECT_EQ(check(*build({throttling(0, 1000)}), h, "v").outcome, block);
}

TEST(ParamFlowThrottling, SeveralRulesMakeARequestWaitForTheLongestQueueNotTheSum) {
  // Sentinel sleeps rule by rule, each from the end of the previous sleep: 100 ms, then the
  // 200 ms rule's remaining 100 ms — 200 ms in all.
  slot_harness h;
  const auto r = build({throttling(10, 1000), throttling(5, 1000)});
  EXPECT_EQ(check(*r, h, "v").outcome, pass);
  const auto v = check(*r, h, "v");
  ASSERT_EQ(v.outcome, wait);
  EXPECT_EQ(v.wait_ns, 200'000'000);
}

// --- concurrency grade -----------------------------------------------------------------------

TEST(ParamFlowConcurrency, AtMostCountEntriesPerValueInFlight) {
  slot_harness h;
  const auto r = build({concurrency(2)});
  entry_tokens a, b, c;
  EXPECT_EQ(check(*r, h, "v", a).outcome, pass);
  EXPECT_EQ(check(*r, h, "v", b).outcome, pass);
  const auto blocked = check(*r, h, "v", c);
  ASSERT_EQ(blocked.outcome, block);
  EXPECT_EQ(blocked.block.reason, block_reason::param_flow);
  EXPECT_EQ(c.param_held_count, 0);
  EXPECT_EQ(check(*r, h, "w", c).outcome, pass) << "another value has its own count";

  r->on_exit(h.exit(), a);
  EXPECT_EQ(a.param_held_count, 0);
  entry_tokens d;
  EXPECT_EQ(check(*r, h, "v", d).outcome, pass);
  entry_tokens e;
  EXPECT_EQ(check(*r, h, "v", e).outcome, block);
}

TEST(ParamFlowConcurrency, ABlockByALaterSlotReleasesTheCount) {
  slot_harness h;
  const auto r = build({concurrency(1)});
  entry_tokens a;
  ASSERT_EQ(check(*r, h, "v", a).outcome, pass);
  r->on_blocked_later(h.check(), a);
  entry_tokens b;
  EXPECT_EQ(check(*r, h, "v", b).outcome, pass);
}

TEST(ParamFlowConcurrency, ABlockByALaterRuleOfTheSameResourceReleasesTheCount) {
  slot_harness h;
  auto zero = concurrency(0);
  zero.param_idx = 1;
  const auto r = build({concurrency(1), zero});
  const std::array<param_value, 2> args{"v", "x"};
  entry_tokens t;
  EXPECT_EQ(r->check(h.check({}, entry_type::inbound, args), t).outcome, block);
  EXPECT_EQ(t.param_held_count, 0);
  EXPECT_EQ(check(*r, h, "v").outcome, pass) << "rule 0's count was given back";
}

TEST(ParamFlowConcurrency, ItemsSetPerValueLimits) {
  slot_harness h;
  auto rule = concurrency(1);
  rule.items = {{"vip", 3}};
  const auto r = build({rule});
  std::array<entry_tokens, 4> t;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(check(*r, h, "vip", t[i]).outcome, pass);
  EXPECT_EQ(check(*r, h, "vip", t[3]).outcome, block);
}

}  // namespace
}  // namespace floodgate
