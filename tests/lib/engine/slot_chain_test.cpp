// The slot chain as a whole: how the verdicts of several slots combine for one entry.
#include <floodgate/engine/engine.hpp>

#include "node/node_registry.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace floodgate {
namespace {

using std::chrono::milliseconds;

flow_rule throttled(double count) {
  return {.resource = "res",
          .count = count,
          .behavior = control_behavior::throttling,
          .max_queueing_time_ms = 1'000};
}

struct SlotChain : ::testing::Test {
  manual_clock clock{1'000'000};
  engine eng{engine_options{.time = &clock}};
  context ctx{eng, "ctx"};

  void load(const rule_set& rules) { ASSERT_TRUE(eng.load_rules(rules).ok()); }

  /// `n` entries of "res" made at once, each in a context of its own (kept in `contexts`).
  std::vector<entry> enter_at_once(int n, const entry_options& options) {
    std::vector<entry> out;
    for (int i = 0; i < n; ++i) {
      contexts.push_back(std::make_unique<context>(eng, "ctx"));
      out.push_back(eng.enter(*contexts.back(), "res", options));
    }
    return out;
  }
  std::vector<std::unique_ptr<context>> contexts;
};

TEST_F(SlotChain, TwoThrottlingFlowRulesMakeARequestWaitForTheLongerQueue) {
  load({.flow = {throttled(10), throttled(5)}});  // 100 ms and 200 ms apart
  EXPECT_EQ(eng.enter(ctx, "res").wait(), milliseconds(0));
  EXPECT_EQ(eng.enter(ctx, "res").wait(), milliseconds(200));  // not 300
}

// Issue 17, fidelity item 3: a throttled request is counted as passed and in flight when its wait
// ends (Sentinel's StatisticSlot counts after FlowSlot's sleep), not while it queues — a
// concurrency rule, warm-up throttling's rate or system maxThread would count it while it waits.
TEST_F(SlotChain, AThrottledRequestIsCountedAsPassedAndInFlightWhenItsWaitEnds) {
  load({.flow = {throttled(10)}});  // 100 ms apart
  context a{eng, "a"}, b{eng, "b"}, c{eng, "c"};
  const entry_options proceeds{.proceeds_after_wait = true};
  entry first = eng.enter(a, "res", proceeds);
  entry second = eng.enter(b, "res", proceeds);
  entry third = eng.enter(c, "res", proceeds);
  ASSERT_EQ(second.wait(), milliseconds(100));
  ASSERT_EQ(third.wait(), milliseconds(200));
  const auto* res = eng.nodes().find_resource("res");
  ASSERT_NE(res, nullptr);
  EXPECT_EQ(res->total_pass(clock.now_ms()), 1u);
  EXPECT_EQ(res->concurrency(), 1);

  clock.advance_ms(100);
  EXPECT_TRUE(second.proceed());
  EXPECT_TRUE(second.proceed());  // once only
  EXPECT_EQ(res->total_pass(clock.now_ms()), 2u);
  EXPECT_EQ(res->concurrency(), 2);

  third.exit();  // gone before its turn came: counted at its exit, and closed
  EXPECT_EQ(res->total_pass(clock.now_ms()), 3u);
  EXPECT_EQ(res->concurrency(), 2);
  first.exit();
  second.exit();
  EXPECT_EQ(res->concurrency(), 0);
}

// A caller that does not say when its work starts is counted at enter, wait or not: never left
// out of the in-flight count while it runs.
TEST_F(SlotChain, WithoutProceedsAfterWaitAThrottledRequestIsCountedAtEnter) {
  load({.flow = {throttled(10)}});
  context a{eng, "a"}, b{eng, "b"};
  const entry first = eng.enter(a, "res");
  const entry second = eng.enter(b, "res");
  ASSERT_EQ(second.wait(), milliseconds(100));
  const auto* res = eng.nodes().find_resource("res");
  EXPECT_EQ(res->total_pass(clock.now_ms()), 2u);
  EXPECT_EQ(res->concurrency(), 2);
}

TEST_F(SlotChain, FlowAndParamQueuesCombineAsTheLongerNotTheSum) {
  param_flow_rule per_value{.resource = "res",
                            .param_idx = 0,
                            .count = 5,  // 200 ms apart per value
                            .behavior = control_behavior::throttling,
                            .max_queueing_time_ms = 1'000};
  load({.flow = {throttled(10)}, .param_flow = {per_value}});
  const param_value args[] = {"alice"};
  EXPECT_EQ(eng.enter(ctx, "res", {.args = args}).wait(), milliseconds(0));
  const entry e = eng.enter(ctx, "res", {.args = args});
  ASSERT_TRUE(e);
  EXPECT_EQ(e.wait(), milliseconds(200));  // not 100 + 200
}

TEST_F(SlotChain, NoWaitExceedsTheLongestMaxQueueingTime) {
  // Two rules queue 100 ms apart: the 11th request waits the whole 1 000 ms, the rest block.
  load({.flow = {throttled(10), throttled(10)}});
  for (int i = 0; i < 20; ++i) {
    const entry e = eng.enter(ctx, "res");
    if (i <= 10) {
      ASSERT_TRUE(e) << i;
      EXPECT_EQ(e.wait(), milliseconds(100 * i)) << i;
    } else {
      EXPECT_TRUE(e.blocked()) << i;
    }
  }
}

// Sentinel's FlowSlot checks a QPS reject rule after a throttling rule's sleep, on the window the
// pass then lands in. Checked at the entry instead, the QPS rule's window held passes the
// statistics counted a second later: an audit saw 7-8 a second for `count: 5`.
TEST_F(SlotChain, AQpsRuleChecksAThrottledEntryWhenItsWaitEnds) {
  flow_rule per_second{.resource = "res", .count = 5};
  load({.flow = {throttled(10), per_second}});  // a request every 100 ms, at most 5 a second
  const entry_options after_wait{.proceeds_after_wait = true};
  std::vector<entry> queued = enter_at_once(10, after_wait);
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(queued[static_cast<std::size_t>(i)]) << i;
    EXPECT_EQ(queued[static_cast<std::size_t>(i)].wait(), milliseconds(100 * i)) << i;
  }
  const auto* res = eng.nodes().find_resource("res");
  const std::int64_t start = clock.now_ms();
  for (int i = 0; i < 10; ++i) {
    clock.set_ms(start + 100 * i);  // this entry's wait ends
    const bool proceeds = queued[static_cast<std::size_t>(i)].proceed();
    EXPECT_EQ(proceeds, i < 5) << i;
    if (!proceeds) {
      const entry& e = queued[static_cast<std::size_t>(i)];
      EXPECT_TRUE(e.blocked()) << i;
      EXPECT_EQ(e.block().reason, block_reason::flow) << i;
      EXPECT_EQ(e.block().rule_index, 1) << i;
    }
  }
  EXPECT_EQ(res->total_pass(clock.now_ms()), 5u);
  EXPECT_EQ(res->block_request(clock.now_ms()), 5u);
  EXPECT_EQ(res->concurrency(), 5) << "the blocked ones hold nothing";
  // A wait given up (the entry exits without proceeding) is checked then too.
  context late_ctx{eng, "ctx"};
  entry late = eng.enter(late_ctx, "res", after_wait);
  ASSERT_TRUE(late);
  late.exit();
  EXPECT_TRUE(late.blocked());
  EXPECT_EQ(res->total_pass(clock.now_ms()), 5u);
  queued.clear();
  EXPECT_EQ(res->concurrency(), 0);
}

// A warm-up rule reads the window's passes as well: checked at the entry, every queued request
// of a burst saw the passes before the queue and passed (ten here, where a cold start allows 3).
// Prioritized entries alike: a warm-up rule never lets them borrow.
class SlotChainWarmUp : public SlotChain, public ::testing::WithParamInterface<bool> {};

TEST_P(SlotChainWarmUp, AWarmUpRuleChecksAThrottledEntryWhenItsWaitEnds) {
  flow_rule warm{.resource = "res",
                 .count = 9,  // cold: 9 / coldFactor 3 = 3 a second
                 .behavior = control_behavior::warm_up,
                 .warm_up_period_sec = 10};
  flow_rule queue{.resource = "res",
                  .count = 100,  // 10 ms apart
                  .behavior = control_behavior::throttling,
                  .max_queueing_time_ms = 1'000};
  load({.flow = {queue, warm}});
  std::vector<entry> queued =
      enter_at_once(10, {.prioritized = GetParam(), .proceeds_after_wait = true});
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(queued[static_cast<std::size_t>(i)]) << i;
  const std::int64_t start = clock.now_ms();
  for (int i = 0; i < 10; ++i) {
    clock.set_ms(start + 10 * i);
    entry& e = queued[static_cast<std::size_t>(i)];
    // The first needs no wait (counted at the entry); the next two see 1 and 2 passes landed.
    EXPECT_EQ(e.proceed(), i < 3) << i;
    if (i >= 3) {
      EXPECT_TRUE(e.blocked()) << i;
      EXPECT_EQ(e.block().rule_index, 1) << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(PrioritizedOrNot, SlotChainWarmUp, ::testing::Bool());

// The check after the wait sees the entry's context as the check at the entry did: a CHAIN rule
// (its entrance) applies then as it would have. (A view of a temporary once stood for the
// entrance name here: without ASan the freed bytes often still read right.)
TEST_F(SlotChain, AChainRuleCheckedWhenTheWaitEndsKnowsTheEntrance) {
  flow_rule per_second{.resource = "res",
                       .count = 2,
                       .strategy = flow_strategy::chain,
                       .ref_resource = "entrance-a"};
  load({.flow = {throttled(10), per_second}});
  const entry_options after_wait{.proceeds_after_wait = true};
  context a1{eng, "entrance-a"};
  context a2{eng, "entrance-a"};
  context b{eng, "entrance-b"};
  entry first = eng.enter(a1, "res", after_wait);
  entry second = eng.enter(a2, "res", after_wait);
  entry other = eng.enter(b, "res", after_wait);
  ASSERT_TRUE(first && second && other);
  clock.advance_ms(200);
  EXPECT_TRUE(second.proceed());
  EXPECT_TRUE(other.proceed()) << "another entrance is not limited by the rule";
  context a3{eng, "entrance-a"};
  entry third = eng.enter(a3, "res", after_wait);
  ASSERT_TRUE(third);
  clock.advance_ms(100);
  EXPECT_FALSE(third.proceed()) << "two a second through entrance-a";
  EXPECT_EQ(third.block().rule_index, 1);
}

// Without a wait, or for a caller that does not proceed after one, the rule decides at the entry.
TEST_F(SlotChain, AQpsRuleNextToAThrottlingRuleStillDecidesEntriesThatDoNotWait) {
  load({.flow = {throttled(1000), {.resource = "res", .count = 2}}});
  const entry_options after_wait{.proceeds_after_wait = true};
  EXPECT_TRUE(eng.enter(ctx, "res", after_wait));
  clock.advance_ms(1);
  EXPECT_TRUE(eng.enter(ctx, "res", after_wait));
  clock.advance_ms(1);
  const entry third = eng.enter(ctx, "res", after_wait);
  EXPECT_TRUE(third.blocked());
  EXPECT_EQ(third.block().rule_index, 1);
}

TEST_F(SlotChain, PrioritizedBorrowingEndsTheChecksBeforeTheBreaker) {
  // As Sentinel's PriorityWaitException: a pass booked in the next window skips DegradeSlot.
  load({.flow = {{.resource = "res", .count = 1}},
        .degrade = {{.resource = "res",
                     .grade = degrade_grade::error_count,
                     .count = 0,  // the first error opens it
                     .min_request_amount = 1,
                     .stat_interval_ms = 1'000,
                     .time_window_sec = 60}}});
  {
    entry failing = eng.enter(ctx, "res");  // the window's only pass
    ASSERT_TRUE(failing);
    failing.trace_error();
  }
  clock.advance_ms(700);  // 300 ms before the next window
  const entry plain = eng.enter(ctx, "res");
  ASSERT_TRUE(plain.blocked());
  const entry borrowed = eng.enter(ctx, "res", {.prioritized = true});
  ASSERT_TRUE(borrowed) << "blocked by reason " << static_cast<int>(borrowed.block().reason);
  EXPECT_EQ(borrowed.wait(), milliseconds(300));
}

TEST_F(SlotChain, AConcurrencyRuleLoadedWhileRequestsAreInFlightCountsThem) {
  std::vector<entry> in_flight;
  for (int i = 0; i < 500; ++i) in_flight.push_back(eng.enter(ctx, "res"));
  load({.flow = {{.resource = "res", .grade = flow_grade::concurrency, .count = 50}}});
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(eng.enter(ctx, "res").blocked()) << "admitted over 500 in flight, try " << i;
  }
  in_flight.resize(10);  // 490 finish
  int admitted = 0;
  for (int i = 0; i < 100; ++i) {
    entry e = eng.enter(ctx, "res");
    if (e) {
      ++admitted;
      in_flight.push_back(std::move(e));
    }
  }
  EXPECT_EQ(admitted, 40);
}

TEST_F(SlotChain, AQpsRuleLoadedMidSecondSeesThatSecondsPasses) {
  for (int i = 0; i < 80; ++i) ASSERT_TRUE(eng.enter(ctx, "res"));  // no rule yet
  load({.flow = {{.resource = "res", .count = 100}}});
  int admitted = 0;
  for (int i = 0; i < 50; ++i) admitted += eng.enter(ctx, "res") ? 1 : 0;
  EXPECT_EQ(admitted, 20);
  // A changed rule is a new rule: it starts from the same traffic, not from zero.
  load({.flow = {{.resource = "res", .count = 110}}});
  admitted = 0;
  for (int i = 0; i < 50; ++i) admitted += eng.enter(ctx, "res") ? 1 : 0;
  EXPECT_EQ(admitted, 10);
  clock.advance_ms(1'000);  // the interval slid past those passes
  admitted = 0;
  for (int i = 0; i < 200; ++i) admitted += eng.enter(ctx, "res") ? 1 : 0;
  EXPECT_EQ(admitted, 110);
}

// An audit: a rule for a named origin, or a chain rule, booked its admissions from zero when it
// was loaded or changed: renamed four times in 400 ms, a count-5 rule for `org` passed 20.
TEST_F(SlotChain, ANamedOriginOrChainRuleLoadedMidSecondSeesThatSecondsPasses) {
  struct rule_case {
    const char* what;
    flow_rule rule;
  };
  const rule_case cases[] = {
      {"named origin", {.resource = "res", .count = 10, .limit_app = "org"}},
      {"chain",
       {.resource = "res", .count = 10, .strategy = flow_strategy::chain, .ref_resource = "web"}},
  };
  for (const rule_case& c : cases) {
    SCOPED_TRACE(c.what);
    clock.advance_ms(10'000);  // a quiet start for each case
    load({});
    context caller{eng, "web", "org"};
    context bystander{eng, "batch", "someone"};  // another context and origin: not counted
    for (int i = 0; i < 8; ++i) ASSERT_TRUE(eng.enter(caller, "res"));  // no rule yet
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(eng.enter(bystander, "res"));
    clock.advance_ms(100);
    flow_rule r = c.rule;
    load({.flow = {r}});
    int admitted = 0;
    for (int i = 0; i < 10; ++i) admitted += eng.enter(caller, "res") ? 1 : 0;
    EXPECT_EQ(admitted, 2) << "new rule";
    clock.advance_ms(100);
    r.name = "renamed";  // a changed rule is a new rule: it starts from the same traffic
    load({.flow = {r}});
    admitted = 0;
    for (int i = 0; i < 10; ++i) admitted += eng.enter(caller, "res") ? 1 : 0;
    EXPECT_EQ(admitted, 0) << "changed rule";
    EXPECT_TRUE(eng.enter(bystander, "res")) << "the rule covers neither that origin nor context";
    clock.advance_ms(1'000);  // the interval slid past those passes
    admitted = 0;
    for (int i = 0; i < 20; ++i) admitted += eng.enter(caller, "res") ? 1 : 0;
    EXPECT_EQ(admitted, 10);
  }
}

// An audit: ten prioritized entries borrowed the coming bucket, the rule was renamed, and the
// renamed rule gave that bucket's room away again: 20 passes in a window against 10.
TEST_F(SlotChain, AChangedQpsRuleKeepsTheRoomPrioritizedEntriesBorrowedAhead) {
  flow_rule rule{.resource = "res", .count = 10};
  load({.flow = {rule}});
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(eng.enter(ctx, "res"));
  clock.advance_ms(600);
  std::vector<entry> borrowed;
  for (int i = 0; i < 10; ++i) {
    borrowed.push_back(eng.enter(ctx, "res", {.prioritized = true}));
    ASSERT_TRUE(borrowed.back());
    ASSERT_EQ(borrowed.back().wait(), milliseconds(400));  // into the bucket at +1000
  }
  clock.advance_ms(100);
  rule.name = "renamed";
  load({.flow = {rule}});
  clock.advance_ms(300);  // the borrowed bucket has come: the window holds its 10
  int admitted = 0;
  for (int i = 0; i < 20; ++i) admitted += eng.enter(ctx, "res") ? 1 : 0;
  EXPECT_EQ(admitted, 0);
  clock.advance_ms(1'000);  // the borrowed bucket slid out
  admitted = 0;
  for (int i = 0; i < 20; ++i) admitted += eng.enter(ctx, "res") ? 1 : 0;
  EXPECT_EQ(admitted, 10);
}

TEST_F(SlotChain, EntriesAdmittedBeforeAReloadReportTheirExitToTheBreakersInForceAtExit) {
  std::vector<entry> in_flight;
  for (int i = 0; i < 3; ++i) in_flight.push_back(eng.enter(ctx, "res"));  // no breaker yet
  load({.degrade = {{.resource = "res",
                     .grade = degrade_grade::error_count,
                     .count = 2,
                     .min_request_amount = 1,
                     .stat_interval_ms = 10'000,
                     .time_window_sec = 10}}});
  for (entry& e : in_flight) {
    e.trace_error();
    e.exit();  // three errors > 2: the breaker loaded meanwhile opens
  }
  const entry next = eng.enter(ctx, "res");
  ASSERT_TRUE(next.blocked());
  EXPECT_EQ(next.block().reason, block_reason::degrade);
}

}  // namespace
}  // namespace floodgate
