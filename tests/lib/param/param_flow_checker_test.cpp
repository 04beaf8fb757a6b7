// Hot-parameter QPS rules: Sentinel's ParamFlowDefaultCheckerTest sequences and value handling.
#include "param/param_slot.hpp"

#include "lib/support/slot_harness.hpp"

#include <gtest/gtest.h>

#include <array>

namespace floodgate {
namespace {

using test_support::slot_harness;

param_flow_rule qps_rule(double count, std::int32_t burst = 0, std::int32_t duration = 1) {
  param_flow_rule r;
  r.resource = "res";
  r.param_idx = 0;
  r.count = count;
  r.burst_count = burst;
  r.duration_in_sec = duration;
  return r;
}

std::unique_ptr<resource_param_rules> build(std::vector<param_flow_rule> rules,
                                            const resource_param_rules* previous = nullptr) {
  std::vector<indexed_rule<param_flow_rule>> indexed;
  for (std::size_t i = 0; i < rules.size(); ++i) {
    indexed.push_back({rules[i], static_cast<std::int32_t>(i)});
  }
  return resource_param_rules::build(std::move(indexed), previous, true);
}

slot_verdict check(const resource_param_rules& r, slot_harness& h, param_value v) {
  const std::array<param_value, 1> args{v};
  entry_tokens tokens;
  return r.check(h.check({}, entry_type::inbound, args), tokens);
}

/// Entries of `v` that pass in a row before the first block, at the current time.
int passes_until_blocked(const resource_param_rules& r, slot_harness& h, param_value v) {
  for (int n = 0; n < 1'000'000; ++n) {
    if (check(r, h, v).outcome != slot_verdict::kind::pass) return n;
  }
  return -1;
}

TEST(ParamFlowDefaultChecker, PassesThresholdPerSecondThenBlocks) {
  slot_harness h;
  const auto r = build({qps_rule(5)});
  EXPECT_EQ(passes_until_blocked(*r, h, "v"), 5);
  h.time.advance_ms(3000);
  EXPECT_EQ(passes_until_blocked(*r, h, "v"), 5);
}

TEST(ParamFlowDefaultChecker, BurstAddsToTheBucketButNotToTheRefill) {
  slot_harness h;
  const auto r = build({qps_rule(5, 3)});
  EXPECT_EQ(passes_until_blocked(*r, h, "v"), 8);
  h.time.advance_ms(1002);
  EXPECT_EQ(passes_until_blocked(*r, h, "v"), 5);
  h.time.advance_ms(1002);
  EXPECT_EQ(passes_until_blocked(*r, h, "v"), 5);
  h.time.advance_ms(2000);
  EXPECT_EQ(passes_until_blocked(*r, h, "v"), 8);
  h.time.advance_ms(1002);
  EXPECT_EQ(passes_until_blocked(*r, h, "v"), 5);
}

TEST(ParamFlowDefaultChecker, RefillsOnlyAfterAWholeDuration) {
  slot_harness h;
  const auto r = build({qps_rule(5, 0, 60)});
  EXPECT_EQ(passes_until_blocked(*r, h, "v"), 5);
  h.time.advance_ms(1000);
  EXPECT_EQ(passes_until_blocked(*r, h, "v"), 0);
  h.time.advance_ms(9000);
  EXPECT_EQ(passes_until_blocked(*r, h, "v"), 0);
  h.time.advance_ms(51'000);  // 61 s since the bucket was filled
  EXPECT_EQ(passes_until_blocked(*r, h, "v"), 5);
}

TEST(ParamFlowDefaultChecker, LongGapsRefillWithoutOverflow) {
  slot_harness h;
  const auto r = build({qps_rule(25'000)});
  EXPECT_EQ(passes_until_blocked(*r, h, "v"), 25'000);
  h.time.advance_ms(24LL * 3600 * 1000);
  EXPECT_EQ(passes_until_blocked(*r, h, "v"), 25'000);
  h.time.advance_ms(48LL * 3600 * 1000);
  EXPECT_EQ(passes_until_blocked(*r, h, "v"), 25'000);
}

TEST(ParamFlowDefaultChecker, BucketsRefillAtAnyUptimeAndAfterYearsIdle) {
  // Bucket stamps are milliseconds modulo 2^38 (8.7 years): a clock far past that still works.
  slot_harness h;
  h.time.set_ms(std::int64_t{1} << 40);
  const auto r = build({qps_rule(5)});
  EXPECT_EQ(passes_until_blocked(*r, h, "v"), 5);
  h.time.advance_ms(1001);
  EXPECT_EQ(passes_until_blocked(*r, h, "v"), 5);
  h.time.advance_ms(5LL * 365 * 24 * 3600 * 1000);
  EXPECT_EQ(passes_until_blocked(*r, h, "v"), 5);
}

TEST(ParamFlowDefaultChecker, AnEntryTimedBeforeTheLastRefillOnlySpendsTokens) {
  // Another thread refilled the bucket after this entry read the clock: no second refill.
  slot_harness h;
  const auto r = build({qps_rule(5)});
  const std::int64_t start = h.time.now_ms();
  EXPECT_EQ(passes_until_blocked(*r, h, "v"), 5);
  h.time.set_ms(start + 1500);
  EXPECT_EQ(check(*r, h, "v").outcome, slot_verdict::kind::pass);
  h.time.set_ms(start + 1400);
  EXPECT_EQ(passes_until_blocked(*r, h, "v"), 4);
  const slot_verdict v = check(*r, h, "v");
  ASSERT_EQ(v.outcome, slot_verdict::kind::block);
  EXPECT_EQ(v.block.retry_after, std::chrono::milliseconds(1001));
}

TEST(ParamFlowDefaultChecker, EachValueHasItsOwnBucket) {
  slot_harness h;
  const auto r = build({qps_rule(2)});
  EXPECT_EQ(passes_until_blocked(*r, h, "a"), 2);
  EXPECT_EQ(passes_until_blocked(*r, h, "b"), 2);
  EXPECT_EQ(passes_until_blocked(*r, h, std::int64_t{7}), 2);
}

TEST(ParamFlowDefaultChecker, AcquireTakesThatManyTokens) {
  slot_harness h;
  const auto r = build({qps_rule(5)});
  const std::array<param_value, 1> args{"v"};
  entry_tokens t;
  EXPECT_EQ(r->check(h.check({}, entry_type::inbound, args, 3), t).outcome,
            slot_verdict::kind::pass);
  EXPECT_EQ(r->check(h.check({}, entry_type::inbound, args, 3), t).outcome,
            slot_verdict::kind::block);
  EXPECT_EQ(r->check(h.check({}, entry_type::inbound, args, 2), t).outcome,
            slot_verdict::kind::pass);
  EXPECT_EQ(r->check(h.check({}, entry_type::inbound, args, 6), t).outcome,
            slot_verdict::kind::block)
      << "more than count + burst never passes";
}

TEST(ParamFlowDefaultChecker, ZeroCountBlocksEveryValue) {
  slot_harness h;
  const auto r = build({qps_rule(0)});
  EXPECT_EQ(passes_until_blocked(*r, h, "v"), 0);
}

TEST(ParamFlowDefaultChecker, BlockCarriesReasonRuleAndRetryAfter) {
  slot_harness h;
  const auto r = build({qps_rule(100), qps_rule(1)});
  ASSERT_EQ(check(*r, h, "v").outcome, slot_verdict::kind::pass);
  h.time.advance_ms(300);
  const auto v = check(*r, h, "v");
  ASSERT_EQ(v.outcome, slot_verdict::kind::block);
  EXPECT_EQ(v.block.reason, block_reason::param_flow);
  EXPECT_EQ(v.block.rule_index, 1);
  EXPECT_EQ(v.block.retry_after, std::chrono::milliseconds(701));
  h.time.advance_ms(701);
  EXPECT_EQ(check(*r, h, "v").outcome, slot_verdict::kind::pass);
}

// --- items -----------------------------------------------------------------------------------

TEST(ParamFlowItems, AnItemGivesItsValueItsOwnCount) {
  slot_harness h;
  auto rule = qps_rule(2);
  rule.items = {{"vip", 10}, {"banned", 0}};
  const auto r = build({rule});
  EXPECT_EQ(passes_until_blocked(*r, h, "vip"), 10);
  EXPECT_EQ(passes_until_blocked(*r, h, "banned"), 0);
  EXPECT_EQ(passes_until_blocked(*r, h, "other"), 2);
}

TEST(ParamFlowItems, IntegerArgumentsMatchItemsByTheirDecimalForm) {
  slot_harness h;
  auto rule = qps_rule(1);
  rule.items = {{"42", 3}, {"-9000000000", 4}};
  const auto r = build({rule});
  EXPECT_EQ(passes_until_blocked(*r, h, std::int64_t{42}), 3);
  EXPECT_EQ(passes_until_blocked(*r, h, "42"), 0) << "\"42\" and 42 are one value";
  EXPECT_EQ(passes_until_blocked(*r, h, std::int64_t{-9'000'000'000}), 4);
}

TEST(ParamFlowItems, ALaterItemForTheSameValueWins) {
  slot_harness h;
  auto rule = qps_rule(1);
  rule.items = {{"v", 3}, {"v", 6}};
  EXPECT_EQ(passes_until_blocked(*build({rule}), h, "v"), 6);
}

// --- which argument --------------------------------------------------------------------------

TEST(ParamFlowArguments, NegativeIndexCountsFromTheEnd) {
  slot_harness h;
  auto rule = qps_rule(1);
  rule.param_idx = -1;
  const auto r = build({rule});
  const std::array<param_value, 3> args{"a", "b", "c"};
  entry_tokens t;
  EXPECT_EQ(r->check(h.check({}, entry_type::inbound, args), t).outcome, slot_verdict::kind::pass);
  const std::array<param_value, 1> last_only{"c"};
  EXPECT_EQ(r->check(h.check({}, entry_type::inbound, last_only), t).outcome,
            slot_verdict::kind::block);
}

TEST(ParamFlowArguments, OutOfRangeIndexOrMissingValueIsNotLimited) {
  slot_harness h;
  auto rule = qps_rule(0);
  rule.param_idx = 2;
  const auto r = build({rule});
  const std::array<param_value, 2> two{"a", "b"};
  const std::array<param_value, 3> none_at_two{"a", "b", param_value{}};
  entry_tokens t;
  EXPECT_EQ(r->check(h.check({}, entry_type::inbound, two), t).outcome, slot_verdict::kind::pass);
  EXPECT_EQ(r->check(h.check({}, entry_type::inbound, none_at_two), t).outcome,
            slot_verdict::kind::pass);
  rule.param_idx = -3;
  const auto from_end = build({rule});
  EXPECT_EQ(from_end->check(h.check({}, entry_type::inbound, two), t).outcome,
            slot_verdict::kind::pass);
}

TEST(ParamFlowArguments, HttpSelectorsAskTheExtractor) {
  slot_harness h;
  auto rule = qps_rule(1);
  rule.param_idx.reset();
  rule.param = param_selector{param_source::header, "X-User"};
  const auto r = build({rule});
  struct request {
    const char* user;
  };
  const auto extract = [](const void* ctx, const param_selector& s) noexcept -> param_value {
    const auto* req = static_cast<const request*>(ctx);
    if (s.from != param_source::header || s.name != "X-User" || req->user == nullptr) return {};
    return req->user;
  };
  const request alice{"alice"};
  const request anonymous{nullptr};
  entry_tokens t;
  const auto with = [&](const request& req) {
    return r->check(h.check({}, entry_type::inbound, {}, 1, {&req, extract}), t).outcome;
  };
  EXPECT_EQ(with(alice), slot_verdict::kind::pass);
  EXPECT_EQ(with(alice), slot_verdict::kind::block);
  EXPECT_EQ(with(anonymous), slot_verdict::kind::pass) << "no header: not limited";
  EXPECT_EQ(with(anonymous), slot_verdict::kind::pass);
}

// --- reload ----------------------------------------------------------------------------------

TEST(ParamFlowReload, AnUnchangedRuleKeepsItsBuckets) {
  slot_harness h;
  const auto before = build({qps_rule(5)});
  EXPECT_EQ(passes_until_blocked(*before, h, "v"), 5);
  const auto after = build({qps_rule(9), qps_rule(5)}, before.get());
  EXPECT_EQ(check(*after, h, "v").outcome, slot_verdict::kind::block);
  EXPECT_EQ(check(*after, h, "v").block.rule_index, 1);
}

TEST(ParamFlowReload, AChangedRuleStartsFresh) {
  slot_harness h;
  const auto before = build({qps_rule(5)});
  EXPECT_EQ(passes_until_blocked(*before, h, "v"), 5);
  const auto after = build({qps_rule(6)}, before.get());
  EXPECT_EQ(passes_until_blocked(*after, h, "v"), 6);
}

}  // namespace
}  // namespace floodgate
