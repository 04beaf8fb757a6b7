// A booking made by one rule is undone when a later rule blocks the request (issue 17, fidelity
// item 4): a place taken in a throttling queue is given back, so the next request is not held
// back for a request that never ran.
#include <floodgate/engine/engine.hpp>

#include "flow/throttling_controller.hpp"

#include <gtest/gtest.h>

namespace floodgate {
namespace {

using namespace std::chrono_literals;

const flow_rule throttle{.resource = "res",
                         .count = 10,  // 100 ms apart
                         .behavior = control_behavior::throttling,
                         .max_queueing_time_ms = 1000};

struct BookingUndo : ::testing::Test {
  manual_clock clock;
  engine eng{engine_options{.time = &clock}};
  context ctx{eng, "ctx"};
};

TEST_F(BookingUndo, AThrottlingPlaceIsGivenBackWhenALaterFlowRuleBlocks) {
  ASSERT_TRUE(eng.load_rules({.flow = {throttle, {.resource = "res", .count = 0}}}));
  auto blocked = eng.enter(ctx, "res");
  ASSERT_TRUE(blocked.blocked());
  EXPECT_EQ(blocked.block().rule_index, 1);
  // The throttling rule is unchanged: its schedule carries over without the blocking rule.
  ASSERT_TRUE(eng.load_rules({.flow = {throttle}}));
  auto e = eng.enter(ctx, "res");
  ASSERT_TRUE(e);
  EXPECT_EQ(e.wait(), 0ns) << "the blocked request's place was given back";
  auto next = eng.enter(ctx, "res");
  ASSERT_TRUE(next);
  EXPECT_EQ(next.wait(), 100ms);
}

TEST_F(BookingUndo, AQueuedPlaceIsGivenBackWhenAnOpenBreakerBlocks) {
  const degrade_rule breaker{.resource = "res",
                             .grade = degrade_grade::error_count,
                             .count = 0,  // opens on the first error (strictly more than 0)
                             .min_request_amount = 1,
                             .time_window_sec = 10};
  ASSERT_TRUE(eng.load_rules({.flow = {throttle}, .degrade = {breaker}}));
  {
    auto first = eng.enter(ctx, "res");  // passes at once and opens the breaker with its error
    ASSERT_TRUE(first);
    EXPECT_EQ(first.wait(), 0ns);
    first.trace_error();
  }
  {
    auto first_again = eng.enter(ctx, "res");  // would queue 100 ms, but the breaker is open
    ASSERT_TRUE(first_again.blocked());
    EXPECT_EQ(first_again.block().reason, block_reason::degrade);
  }
  ASSERT_TRUE(eng.load_rules({.flow = {throttle}}));  // breaker gone, schedule kept
  auto e = eng.enter(ctx, "res");
  ASSERT_TRUE(e);
  EXPECT_EQ(e.wait(), 100ms) << "queued behind the first request only, not behind the blocked one";
}

TEST_F(BookingUndo, AWarmUpRulesSpacedColdPassIsGivenBackWhenALaterRuleBlocks) {
  // Count 2 over 2 s starts at 0.67 QPS: one pass every 1.5 s while cold.
  const flow_rule warm{.resource = "res",
                       .count = 2,
                       .behavior = control_behavior::warm_up,
                       .warm_up_period_sec = 2};
  clock.set_ms(1'000'000);
  ASSERT_TRUE(eng.load_rules({.flow = {warm, {.resource = "res", .count = 0}}}));
  auto blocked = eng.enter(ctx, "res");
  ASSERT_TRUE(blocked.blocked());
  EXPECT_EQ(blocked.block().rule_index, 1);
  ASSERT_TRUE(eng.load_rules({.flow = {warm}}));  // the warm-up rule's state carries over
  clock.advance_ms(10);
  auto e = eng.enter(ctx, "res");
  EXPECT_TRUE(e) << "the blocked request's spaced pass was given back";
  auto next = eng.enter(ctx, "res");
  EXPECT_TRUE(next.blocked());
}

TEST(ThrottlingUnqueue, APlaceWithARequestQueuedBehindItIsKept) {
  flow::throttling_controller c{10, 1000};
  const std::int64_t t = 1'000'000'000'000;
  flow::flow_booking first;
  flow::flow_booking second;
  ASSERT_EQ(c.check({t / 1'000'000, t, 1, false, 500}, first).outcome, slot_verdict::kind::pass);
  ASSERT_EQ(c.check({t / 1'000'000, t, 1, false, 500}, second).wait_ns, 100'000'000);
  ASSERT_TRUE(first.queued);
  c.unqueue(first.queue_from_ns, first.queue_to_ns);  // the second request waits behind it
  EXPECT_EQ(c.check({t / 1'000'000, t, 1, false, 500}).wait_ns, 200'000'000);
}

TEST(ThrottlingUnqueue, TheLastPlaceReturnsTheScheduleToWhereItWas) {
  flow::throttling_controller c{10, 1000};
  const std::int64_t t = 1'000'000'000'000;
  ASSERT_EQ(c.check({t / 1'000'000, t, 1, false, 500}).outcome, slot_verdict::kind::pass);
  flow::flow_booking queued;
  ASSERT_EQ(c.check({t / 1'000'000, t, 1, false, 500}, queued).wait_ns, 100'000'000);
  c.unqueue(queued.queue_from_ns, queued.queue_to_ns);
  EXPECT_EQ(c.check({t / 1'000'000, t, 1, false, 500}).wait_ns, 100'000'000);
}

}  // namespace
}  // namespace floodgate
