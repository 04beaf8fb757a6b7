// StatisticNode formulas and occupiable windows (Sentinel's ArrayMetric / OccupiableBucketLeapArray
// tests).
#include "stat/statistic_node.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace floodgate::stat {
namespace {

constexpr std::int64_t t0 = 1'000'000;

TEST(StatisticNode, SumsEveryEventOfTheWindow) {
  statistic_node n;
  for (int i = 0; i < 9; ++i) n.add_pass(t0, 1);
  for (int i = 0; i < 2; ++i) n.add_block(t0, 1);
  for (int i = 0; i < 6; ++i) n.add_exception(t0, 1);
  for (int i = 0; i < 9; ++i) n.add_rt_and_success(t0, 0, 1);
  n.add_rt_and_success(t0, 21, 0);
  EXPECT_EQ(n.window_sum(metric_event::pass, t0), 9u);
  EXPECT_EQ(n.window_sum(metric_event::block, t0), 2u);
  EXPECT_EQ(n.window_sum(metric_event::success, t0), 9u);
  EXPECT_EQ(n.window_sum(metric_event::exception, t0), 6u);
  EXPECT_EQ(n.window_sum(metric_event::rt, t0), 21u);
  EXPECT_DOUBLE_EQ(n.pass_qps(t0), 9.0);
  EXPECT_DOUBLE_EQ(n.total_qps(t0), 11.0);
  EXPECT_DOUBLE_EQ(n.avg_rt(t0), 21.0 / 9.0);
  EXPECT_DOUBLE_EQ(n.min_rt(t0), 1.0);  // at least 1, as Sentinel
}

// An entry counts its +1 in flight beside its pass, in its bucket; an exit its -1 in its own
// bucket. The live count is their sum, whichever buckets and however many windows later.
TEST(StatisticNode, ConcurrencySpansTheBucketsOfEntryAndExit) {
  statistic_node n;
  const write_point enter = n.at(t0);
  n.record_pass(enter, 1);
  n.record_pass(n.at(t0 + 500), 2);  // the other bucket of the default 2 x 500 ms
  EXPECT_EQ(n.concurrency(), 2);
  EXPECT_EQ(n.window_sum(metric_event::pass, t0 + 500), 3u);
  n.record_completion(n.at(t0 + 700), 700, 1, false);  // the first exits from the second bucket
  EXPECT_EQ(n.concurrency(), 1);
  n.record_completion(n.at(t0 + 5'000), 4'500, 2, true);  // both windows have rolled since
  EXPECT_EQ(n.concurrency(), 0);
  EXPECT_EQ(n.window_sum(metric_event::success, t0 + 700), 1u);
  EXPECT_EQ(n.window_sum(metric_event::rt, t0 + 700), 700u);
  EXPECT_EQ(n.window_sum(metric_event::success, t0 + 5'000), 2u);
  EXPECT_EQ(n.window_sum(metric_event::exception, t0 + 5'000), 2u);
  EXPECT_EQ(n.window_sum(metric_event::rt, t0 + 5'000), 4'500u);
  EXPECT_DOUBLE_EQ(n.min_rt(t0 + 5'000), 4'500.0);
  EXPECT_EQ(n.total_pass(t0 + 5'000), 3u);
  EXPECT_EQ(n.total_success(t0 + 5'000), 3u);
}

TEST(StatisticNode, IdleNodeReportsZeroRatesAndMaxMinRt) {
  statistic_node n;
  for (int i = 0; i < 300; ++i) {
    n.increase_concurrency();
    n.add_pass(t0, 1);
    n.add_rt_and_success(t0, 5, 1);
    n.decrease_concurrency();
  }
  EXPECT_EQ(n.total_request(t0), 300u);
  EXPECT_EQ(n.total_success(t0), 300u);
  const auto later = t0 + 3000;
  EXPECT_EQ(n.concurrency(), 0);
  EXPECT_DOUBLE_EQ(n.pass_qps(later), 0.0);
  EXPECT_DOUBLE_EQ(n.success_qps(later), 0.0);
  EXPECT_DOUBLE_EQ(n.min_rt(later), 5000.0);
  EXPECT_EQ(n.total_pass(later), 300u);  // still inside the minute window
  EXPECT_EQ(n.total_pass(t0 + 61'000), 0u);
}

TEST(StatisticNode, PassQpsCoversCurrentAndPreviousHalfSecond) {
  statistic_node n;
  n.add_pass(t0 + 100, 3);
  n.add_pass(t0 + 600, 4);
  EXPECT_DOUBLE_EQ(n.pass_qps(t0 + 900), 7.0);
  EXPECT_DOUBLE_EQ(n.pass_qps(t0 + 1100), 4.0);
  EXPECT_DOUBLE_EQ(n.pass_qps(t0 + 1600), 0.0);
}

TEST(StatisticNode, PreviousPassQpsIsTheLastWholeSecond) {
  statistic_node n;
  n.add_pass(t0 + 10, 8);
  n.add_block(t0 + 20, 2);
  EXPECT_DOUBLE_EQ(n.previous_pass_qps(t0 + 10), 0.0);
  EXPECT_DOUBLE_EQ(n.previous_pass_qps(t0 + 1010), 8.0);
  EXPECT_DOUBLE_EQ(n.previous_block_qps(t0 + 1010), 2.0);
  EXPECT_DOUBLE_EQ(n.previous_pass_qps(t0 + 2010), 0.0);
}

TEST(StatisticNode, MinuteWindowCountsFoldedAndCurrentValuesOnce) {
  statistic_node n;
  for (int ms = 0; ms < 5000; ms += 100) {  // 50 passes over five seconds, 10 per second
    n.add_pass(t0 + ms, 1);
  }
  EXPECT_EQ(n.total_pass(t0 + 4999), 50u);
  EXPECT_DOUBLE_EQ(n.previous_pass_qps(t0 + 4999), 10.0);
  EXPECT_EQ(n.total_pass(t0 + 60'500), 40u);  // the first second has left the minute
  EXPECT_EQ(n.total_pass(t0 + 64'999), 0u);
}

// Threads whose times differ by seconds: late events miss the short window but not the minute.
TEST(StatisticNode, ConcurrentWritersAcrossWindowsLoseNothingInTheMinute) {
  statistic_node n;
  constexpr int threads = 4;
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([&] {
      for (int ms = 0; ms < 30'000; ms += 10) {
        n.add_pass(t0 + ms, 1);
      }
    });
  }
  for (auto& th : pool) th.join();
  EXPECT_EQ(n.total_pass(t0 + 30'000), static_cast<std::uint64_t>(threads * 3000));
}

TEST(StatisticNode, MaxSuccessQpsScalesTheBestBucket) {
  statistic_node n;
  n.add_rt_and_success(t0, 1, 3);
  n.add_rt_and_success(t0 + 500, 1, 5);
  EXPECT_DOUBLE_EQ(n.max_success_qps(t0 + 500), 10.0);  // 5 per 500 ms bucket
}

// OccupiableBucketLeapArrayTest: 200 ms windows, 2 s interval.
window_config occupiable_config() {
  window_config c;
  c.second_sample_count = 10;
  c.second_interval_ms = 2000;
  return c;
}

TEST(OccupiableWindow, WaitingPassesAreFutureUntilTheirWindowComes) {
  statistic_node n(occupiable_config());
  n.add_pass(t0, 1);
  n.add_waiting(t0 + 200, 2);
  EXPECT_EQ(n.waiting(t0), 2u);
  EXPECT_EQ(n.window_pass_at(t0, t0), 1u);
  EXPECT_EQ(n.window_sum(metric_event::pass, t0 + 200), 3u);
}

TEST(OccupiableWindow, BorrowingEveryWindowForAWholeInterval) {
  statistic_node n(occupiable_config());
  for (int i = 0; i < 10; ++i) {
    n.add_pass(t0 + i * 200, 1);
    n.add_waiting(t0 + (i + 1) * 200, 1);
  }
  EXPECT_EQ(n.window_sum(metric_event::pass, t0 + 2000), 19u);
  EXPECT_EQ(n.waiting(t0), 10u);
}

TEST(OccupiableWindow, ConcurrentBorrowersLoseNothing) {
  statistic_node n(occupiable_config());
  constexpr int threads = 16;
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([&] {
      n.add_pass(t0, 1);
      n.add_waiting(t0 + 200, 1);
    });
  }
  for (auto& th : pool) th.join();
  EXPECT_EQ(n.window_pass_at(t0, t0), static_cast<std::uint64_t>(threads));
  EXPECT_EQ(n.waiting(t0), static_cast<std::uint64_t>(threads));
  EXPECT_EQ(n.window_sum(metric_event::pass, t0 + 200), static_cast<std::uint64_t>(threads * 2));
}

TEST(StatisticNode, TryOccupyNextWaitsForTheOldestBucketToLeave) {
  statistic_node n;  // 2 x 500 ms
  n.add_pass(t0 + 100, 10);  // first half of the second
  // At t0+600 the window already holds 10 of a threshold 10: room appears when the first
  // bucket leaves, 400 ms later.
  EXPECT_EQ(n.try_occupy_next(t0 + 600, 1, 10, 500), 400);
  // With a 300 ms limit there is no room in time.
  EXPECT_EQ(n.try_occupy_next(t0 + 600, 1, 10, 300), 300);
}

}  // namespace
}  // namespace floodgate::stat
