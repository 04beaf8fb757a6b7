// The reject controller (Sentinel's DefaultControllerTest, plus no-overshoot and borrowing).
#include "flow/default_controller.hpp"

#include "lib/support/held_rounds.hpp"
#include "lib/support/slot_harness.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace floodgate::flow {
namespace {

using test_support::slot_harness;

bool passes(const slot_verdict& v) { return v.outcome == slot_verdict::kind::pass; }
bool blocks(const slot_verdict& v) { return v.outcome == slot_verdict::kind::block; }

TEST(DefaultController, QpsPassesBelowCountAndBlocksAtCount) {
  // Sentinel: threshold 10, passQps 9 → pass, 10 → block. Here the rule books its own passes.
  slot_harness h;
  default_controller c{flow_grade::qps, 10};
  flow_booking b;
  for (int i = 0; i < 9; ++i)
    ASSERT_TRUE(passes(c.check(h.request(), h.cluster_exclusive(), true, b)));
  EXPECT_TRUE(passes(c.check(h.request(), h.cluster_exclusive(), true, b)));  // 9 booked
  EXPECT_TRUE(blocks(c.check(h.request(), h.cluster_exclusive(), true, b)));  // 10 booked
}

TEST(DefaultController, QpsOnASharedNodeReadsItsPassQps) {
  slot_harness h;
  default_controller c{flow_grade::qps, 10};
  flow_booking b;
  h.pass(9);
  EXPECT_TRUE(passes(c.check(h.request(), h.shared(h.cluster), true, b)));
  h.pass(1);
  const auto v = c.check(h.request(), h.shared(h.cluster), true, b);
  EXPECT_TRUE(blocks(v));
  EXPECT_EQ(v.block.reason, block_reason::flow);
  EXPECT_EQ(b.admitted_window, -1);  // nothing booked on a shared node
}

TEST(DefaultController, ConcurrencyPassesBelowCountAndBlocksAtCount) {
  // Sentinel: threshold 8, curThreadNum 7 → pass, 8 → block.
  slot_harness h;
  default_controller c{flow_grade::concurrency, 8};
  for (int i = 0; i < 7; ++i) {
    flow_booking b;
    ASSERT_TRUE(passes(c.check(h.request(), h.cluster_exclusive(), true, b)));
    ASSERT_TRUE(b.held);
  }
  flow_booking eighth;
  EXPECT_TRUE(passes(c.check(h.request(), h.cluster_exclusive(), true, eighth)));
  flow_booking ninth;
  EXPECT_TRUE(blocks(c.check(h.request(), h.cluster_exclusive(), true, ninth)));
  EXPECT_FALSE(ninth.held);
  EXPECT_EQ(c.in_flight(), 8);
  c.release();
  EXPECT_TRUE(passes(c.check(h.request(), h.cluster_exclusive(), true, ninth)));
}

TEST(DefaultController, ANewConcurrencyRuleCountsTheRequestsAlreadyInFlight) {
  // Loaded while 500 requests are in flight: none of them holds the rule's own count, but the
  // resource's live in-flight count shows them, so nothing more passes until they drop below 50.
  slot_harness h;
  for (int i = 0; i < 500; ++i) h.cluster.increase_concurrency();
  default_controller c{flow_grade::concurrency, 50};
  flow_booking b;
  EXPECT_TRUE(blocks(c.check(h.request(), h.cluster_exclusive(), true, b)));
  for (int i = 0; i < 451; ++i) h.cluster.decrease_concurrency();  // 49 left
  EXPECT_TRUE(passes(c.check(h.request(), h.cluster_exclusive(), true, b)));
  h.cluster.increase_concurrency();  // the statistic slot records that pass: 50 in flight
  flow_booking next;
  EXPECT_TRUE(blocks(c.check(h.request(), h.cluster_exclusive(), true, next)));
}

TEST(DefaultController, ConcurrencyOnASharedNodeReadsItsConcurrency) {
  slot_harness h;
  default_controller c{flow_grade::concurrency, 8};
  flow_booking b;
  for (int i = 0; i < 7; ++i) h.cluster.increase_concurrency();
  EXPECT_TRUE(passes(c.check(h.request(), h.shared(h.cluster), true, b)));
  h.cluster.increase_concurrency();
  EXPECT_TRUE(blocks(c.check(h.request(), h.shared(h.cluster), true, b)));
  EXPECT_FALSE(b.held);
}

TEST(DefaultController, ConcurrencyBlockCarriesNoRetryTime) {
  slot_harness h;
  default_controller c{flow_grade::concurrency, 0};
  flow_booking b;
  const auto v = c.check(h.request(), h.cluster_exclusive(), true, b);
  ASSERT_TRUE(blocks(v));
  EXPECT_EQ(v.block.retry_after.count(), 0);
}

TEST(DefaultController, QpsBlockCarriesTheTimeUntilASlotFrees) {
  slot_harness h;
  h.time.set_ms(1'000'200);  // 200 ms into a window
  default_controller c{flow_grade::qps, 1};
  flow_booking b;
  ASSERT_TRUE(passes(c.check(h.request(), h.cluster_exclusive(), true, b)));
  h.time.advance_ms(100);
  const auto v = c.check(h.request(), h.cluster_exclusive(), true, b);
  ASSERT_TRUE(blocks(v));
  EXPECT_EQ(v.block.retry_after.count(), 700);  // the pass leaves the interval at 1'001'000
}

TEST(DefaultController, PrioritizedEntryBorrowsTheNextWindowAndWaitsForIt) {
  slot_harness h;
  default_controller c{flow_grade::qps, 2};
  flow_booking b;
  h.time.set_ms(1'000'100);
  ASSERT_TRUE(passes(c.check(h.request(), h.cluster_exclusive(), true, b)));
  ASSERT_TRUE(passes(c.check(h.request(), h.cluster_exclusive(), true, b)));
  h.time.set_ms(1'000'700);
  h.time.advance_ns(250'000);
  flow_booking borrowed;
  const auto v = c.check(h.request(1, true), h.cluster_exclusive(), true, borrowed);
  ASSERT_EQ(v.outcome, slot_verdict::kind::wait);
  EXPECT_EQ(v.wait_ns, 299'750'000);  // until 1'001'000 ms exactly
  EXPECT_TRUE(borrowed.pass_booked);
  EXPECT_EQ(borrowed.admitted_window, 1'001'000 / 500);
  // Sentinel's bookings: one waiting pass in the future window, one occupied pass per minute.
  EXPECT_EQ(h.cluster.waiting(h.time.now_ms()), 1u);
  EXPECT_EQ(h.cluster.total_pass(h.time.now_ms()), 1u);
  // A normal entry is still blocked.
  EXPECT_TRUE(blocks(c.check(h.request(), h.cluster_exclusive(), true, b)));
}

TEST(DefaultController, PrioritizedEntryIsBlockedWhenNoWindowFreesInTime) {
  slot_harness h;
  h.time.set_ms(1'000'100);
  default_controller c{flow_grade::qps, 1};
  flow_booking b;
  ASSERT_TRUE(passes(c.check(h.request(), h.cluster_exclusive(), true, b)));
  flow_booking borrowed;
  EXPECT_TRUE(blocks(c.check(h.request(1, true), h.cluster_exclusive(), true, borrowed)));
  EXPECT_FALSE(borrowed.pass_booked);
}

TEST(DefaultController, PrioritizedEntryOnASharedNodeUsesTryOccupyNext) {
  slot_harness h;
  h.time.set_ms(1'000'100);
  h.pass(2);
  h.time.set_ms(1'000'700);
  default_controller c{flow_grade::qps, 2};
  flow_booking b;
  const auto v = c.check(h.request(1, true), h.shared(h.cluster), true, b);
  ASSERT_EQ(v.outcome, slot_verdict::kind::wait);
  EXPECT_EQ(v.wait_ns, 300'000'000);
  EXPECT_TRUE(b.pass_booked);
  EXPECT_EQ(h.cluster.waiting(h.time.now_ms()), 1u);
}

TEST(DefaultController, RacingThreadsNeverHoldMoreThanCountInFlight) {
  for (const int threads : {2, 4, 8}) {
    slot_harness h;
    default_controller c{flow_grade::concurrency, 3};
    std::atomic<int> most_in_flight{0};
    const auto admitted = test_support::admitted_per_round(
        threads, 300,
        [&](int) {
          flow_booking b;
          if (!passes(c.check(h.request(), h.cluster_exclusive(), true, b))) return false;
          const int now = static_cast<int>(c.in_flight());
          int seen = most_in_flight.load();
          while (now > seen && !most_in_flight.compare_exchange_weak(seen, now)) {
          }
          return true;
        },
        [&](int) { c.release(); });
    for (std::size_t r = 0; r < admitted.size(); ++r) {
      ASSERT_EQ(admitted[r], std::min(threads, 3)) << threads << " threads, round " << r;
    }
    EXPECT_LE(most_in_flight.load(), 3) << threads << " threads";
    EXPECT_EQ(c.in_flight(), 0);
  }
}

}  // namespace
}  // namespace floodgate::flow
