// The throttling controller (Sentinel's ThrottlingControllerTest) and the warm-up variant
// (WarmUpRateLimiterControllerTest).
#include <floodgate/chain/clock.hpp>
#include "flow/throttling_controller.hpp"
#include "flow/warm_up_throttling_controller.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace floodgate::flow {
namespace {

constexpr std::int64_t ms = 1'000'000;  // ns
constexpr std::int64_t start_ms = 1'000'000;

flow_request at_ns(std::int64_t now_ns, std::uint32_t acquire = 1) {
  return {now_ns / ms, now_ns, acquire, false, 500};
}

TEST(ThrottlingController, SpacesSequentialRequestsByOneOverCount) {
  // Sentinel: (500 ms, 10 QPS): 6 requests in a row all pass, over more than 400 ms.
  throttling_controller c{10, 500};
  const std::int64_t t = start_ms * ms;
  std::vector<std::int64_t> waits;
  for (int i = 0; i < 6; ++i) {
    const auto v = c.check(at_ns(t));
    ASSERT_NE(v.outcome, slot_verdict::kind::block) << i;
    waits.push_back(v.wait_ns);
  }
  EXPECT_EQ(waits,
            (std::vector<std::int64_t>{0, 100 * ms, 200 * ms, 300 * ms, 400 * ms, 500 * ms}));
}

TEST(ThrottlingController, BlocksWhenTheQueueWouldExceedMaxQueueingTime) {
  throttling_controller c{10, 500};
  const std::int64_t t = start_ms * ms;
  for (int i = 0; i < 6; ++i) ASSERT_NE(c.check(at_ns(t)).outcome, slot_verdict::kind::block);
  const auto v = c.check(at_ns(t));
  ASSERT_EQ(v.outcome, slot_verdict::kind::block);
  EXPECT_EQ(v.block.reason, block_reason::flow);
  // Its turn would be 600 ms away; the queue has room again in 100 ms.
  EXPECT_EQ(v.block.retry_after.count(), 100);
  // Once the first queued request has passed, there is room again.
  EXPECT_EQ(c.check(at_ns(t + 100 * ms)).outcome, slot_verdict::kind::wait);
}

TEST(ThrottlingController, CountZeroBlocksAndAcquireZeroPasses) {
  throttling_controller c{0, 500};
  EXPECT_EQ(c.check(at_ns(start_ms * ms, 1)).outcome, slot_verdict::kind::block);
  EXPECT_EQ(c.check(at_ns(start_ms * ms, 0)).outcome, slot_verdict::kind::pass);
}

TEST(ThrottlingController, IdleTimeDoesNotAccumulateBurst) {
  throttling_controller c{10, 500};
  const std::int64_t t = start_ms * ms;
  ASSERT_EQ(c.check(at_ns(t)).outcome, slot_verdict::kind::pass);
  // Ten seconds idle: the next passes at once, the one after waits a full spacing.
  EXPECT_EQ(c.check(at_ns(t + 10'000 * ms)).outcome, slot_verdict::kind::pass);
  EXPECT_EQ(c.check(at_ns(t + 10'000 * ms)).wait_ns, 100 * ms);
}

TEST(ThrottlingController, CountsAboveAThousandAreSpacedBelowAMillisecond) {
  throttling_controller c{4000, 10};
  const std::int64_t t = start_ms * ms;
  ASSERT_EQ(c.check(at_ns(t)).outcome, slot_verdict::kind::pass);
  EXPECT_EQ(c.check(at_ns(t)).wait_ns, 250'000);
  EXPECT_EQ(c.check(at_ns(t)).wait_ns, 500'000);
  // Counts that do not divide 1000 are spaced in nanoseconds too: 1e9 / 3.
  throttling_controller third{3, 1000};
  ASSERT_EQ(third.check(at_ns(t)).outcome, slot_verdict::kind::pass);
  EXPECT_EQ(third.check(at_ns(t)).wait_ns, 333'333'333);
}

TEST(ThrottlingController, RacingThreadsAreNeverSpacedCloserThanTheCost) {
  for (const int threads : {2, 4, 8}) {
    manual_clock clock{start_ms};
    throttling_controller c{1000, 50};  // 1 ms apart, at most 50 ms queued
    std::mutex m;
    std::vector<std::int64_t> turns;
    std::atomic<int> blocked{0};
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; ++i) {
      pool.emplace_back([&] {
        std::vector<std::int64_t> mine;
        for (int k = 0; k < 2000; ++k) {
          const std::int64_t now = clock.now_ns();
          const auto v = c.check(at_ns(now));
          if (v.outcome == slot_verdict::kind::block) {
            blocked.fetch_add(1);
          } else {
            EXPECT_LE(v.wait_ns, 50 * ms);
            mine.push_back(now + v.wait_ns);
          }
          if (k % 16 == 0) clock.advance_ns(200'000);
        }
        std::lock_guard lock(m);
        turns.insert(turns.end(), mine.begin(), mine.end());
      });
    }
    for (auto& t : pool) t.join();
    std::sort(turns.begin(), turns.end());
    ASSERT_GT(turns.size(), 10u);
    for (std::size_t i = 1; i < turns.size(); ++i) {
      ASSERT_GE(turns[i] - turns[i - 1], 1 * ms) << threads << " threads, turn " << i;
    }
    EXPECT_GT(blocked.load(), 0);
  }
}

TEST(WarmUpThrottlingController, AWarmBucketSpacesRequestsOneOverCountApart) {
  // Sentinel: (10 QPS, 10 s, timeout 1000 ms) with 100 passes the previous second: the bucket
  // drains at once, so 10 requests in a row are 100 ms apart.
  warm_up_throttling_controller c{10, 10, 1000};
  stat::statistic_node n;
  const std::int64_t t = start_ms + 500;
  n.add_pass(start_ms - 1000, 100);
  std::vector<std::int64_t> turns;
  for (int i = 0; i < 10; ++i) {
    const auto v = c.check(at_ns(t * ms), n);
    ASSERT_NE(v.outcome, slot_verdict::kind::block) << i;
    turns.push_back(t * ms + v.wait_ns);
  }
  EXPECT_EQ(c.bucket().stored_tokens(), 0);
  const double average = static_cast<double>(turns.back() - turns.front()) / 9;
  EXPECT_NEAR(average, 100.0 * ms, 10.0 * ms);
}

TEST(WarmUpThrottlingController, ASecondRequestBeyondTheTimeoutIsBlocked) {
  warm_up_throttling_controller c{10, 10, 10};
  stat::statistic_node n;
  n.add_pass(start_ms - 1000, 100);
  EXPECT_EQ(c.check(at_ns(start_ms * ms), n).outcome, slot_verdict::kind::pass);
  EXPECT_EQ(c.check(at_ns(start_ms * ms), n).outcome, slot_verdict::kind::block);
}

TEST(WarmUpThrottlingController, ColdBucketSpacesRequestsAtTheColdRate) {
  // Cold: the rate is count / 3 = 3.33 QPS, so 300 ms apart.
  warm_up_throttling_controller c{10, 10, 1000};
  stat::statistic_node n;
  ASSERT_EQ(c.check(at_ns(start_ms * ms), n).outcome, slot_verdict::kind::pass);
  EXPECT_NEAR(static_cast<double>(c.check(at_ns(start_ms * ms), n).wait_ns), 300.0 * ms, 1.0 * ms);
}

}  // namespace
}  // namespace floodgate::flow
