// LeapArray scenarios from Sentinel's LeapArrayTest / BucketLeapArrayTest, on tagged cells.
#include "stat/leap_array.hpp"
#include "stat/metric_bucket.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace floodgate::stat {
namespace {

using bucket_array = leap_array<second_bucket>;

void add(bucket_array& a, std::int64_t t, metric_event e, std::uint64_t n = 1) {
  const auto w = a.window_of(t);
  a.bucket(w).add(e, cell_tag(w), n);
}

std::uint64_t value_at(const bucket_array& a, std::int64_t t, metric_event e) {
  const auto w = a.window_of(t);
  return a.bucket(w).value(e, cell_tag(w));
}

std::uint64_t sum(const bucket_array& a, std::int64_t t, metric_event e) {
  std::uint64_t s = 0;
  a.for_each_window(t, [&](const second_bucket& b, std::uint64_t tag, std::int64_t) {
    s += b.value(e, tag);
  });
  return s;
}

int windows_with_data(const bucket_array& a, std::int64_t t) {
  int n = 0;
  a.for_each_window(t, [&](const second_bucket& b, std::uint64_t tag, std::int64_t) {
    n += b.value(metric_event::pass, tag) > 0 ? 1 : 0;
  });
  return n;
}

TEST(LeapArray, WindowStartIsAlignedToWindowLength) {
  bucket_array a(2, 2000);
  const std::int64_t t = 1'234'567;
  EXPECT_EQ(a.window_ms(), 1000);
  EXPECT_EQ(a.window_start(t), t - t % 1000);
}

TEST(LeapArray, SameWindowAccumulatesAndNextWindowStartsEmpty) {
  bucket_array a(2, 2000);
  const std::int64_t t = 1'000'000;
  add(a, t, metric_event::pass);
  add(a, t, metric_event::block);
  add(a, t + 500, metric_event::pass);
  EXPECT_EQ(value_at(a, t, metric_event::pass), 2u);
  EXPECT_EQ(value_at(a, t + 500, metric_event::block), 1u);
  EXPECT_EQ(value_at(a, t + 1000, metric_event::pass), 0u);
  add(a, t + 1000, metric_event::pass);
  EXPECT_EQ(value_at(a, t + 1000, metric_event::pass), 1u);
  // The previous bucket is still part of the interval one window later, gone after 11 s.
  EXPECT_EQ(sum(a, t + 1000, metric_event::pass), 3u);
  EXPECT_EQ(sum(a, t + 11000, metric_event::pass), 0u);
}

TEST(LeapArray, ReusedSlotDropsTheStaleValue) {
  bucket_array a(2, 2000);
  const std::int64_t t = 1'000'000;
  add(a, t, metric_event::pass, 5);
  // Two windows later the same slot is reused: the write replaces the stale count.
  add(a, t + 2000, metric_event::pass, 1);
  EXPECT_EQ(value_at(a, t + 2000, metric_event::pass), 1u);
  EXPECT_EQ(sum(a, t + 2000, metric_event::pass), 1u);
}

TEST(LeapArray, ValidHeadMovesOneWindowPerWindowLength) {
  // Sentinel's testGetValidHead: 10 x 100 ms, fill 10 consecutive windows.
  bucket_array a(10, 1000);
  const std::int64_t t0 = 1'000'000;
  for (int i = 0; i < 10; ++i) {
    add(a, t0 + i * 100, metric_event::pass, static_cast<std::uint64_t>(i + 1));
  }
  std::vector<std::uint64_t> seen;
  a.for_each_window(t0 + 900, [&](const second_bucket& b, std::uint64_t tag, std::int64_t) {
    seen.push_back(b.value(metric_event::pass, tag));
  });
  ASSERT_EQ(seen.size(), 10u);
  EXPECT_EQ(seen.front(), 1u);  // oldest valid bucket is the first one written
  seen.clear();
  a.for_each_window(t0 + 1000, [&](const second_bucket& b, std::uint64_t tag, std::int64_t) {
    seen.push_back(b.value(metric_event::pass, tag));
  });
  EXPECT_EQ(seen.front(), 2u);  // 100 ms later the head is the second bucket
  EXPECT_EQ(seen.back(), 0u);   // the newest window has no data yet
}

TEST(LeapArray, DeprecatedBucketsAreNeverRead) {
  // 10 x 100 ms: after interval + one window, writing into the new window leaves one bucket.
  bucket_array a(10, 1000);
  const std::int64_t t0 = 1'000'000;
  for (int i = 0; i < 10; ++i) {
    add(a, t0 + i * 100, metric_event::pass);
  }
  const std::int64_t later = t0 + 900 + 1000 + 100;  // interval + one window after the last
  add(a, later, metric_event::pass);
  EXPECT_EQ(windows_with_data(a, later), 1);
  EXPECT_EQ(sum(a, later, metric_event::pass), 1u);
}

TEST(LeapArray, ClockGoingBackwardsCannotCorruptNewerWindows) {
  bucket_array a(2, 1000);
  const std::int64_t t = 1'000'000;
  add(a, t + 1000, metric_event::pass, 3);
  // A writer with a time two windows older maps to the same slot: its event is dropped.
  add(a, t, metric_event::pass, 7);
  EXPECT_EQ(value_at(a, t + 1000, metric_event::pass), 3u);
  EXPECT_EQ(sum(a, t + 1000, metric_event::pass), 3u);
}

TEST(LeapArray, ConcurrentWritersOnAnEmptyWindowLoseNothing) {
  bucket_array a(2, 2000);
  const std::int64_t t = 1'000'000;
  constexpr int threads = 16;
  constexpr int per_thread = 1000;
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([&] {
      for (int j = 0; j < per_thread; ++j) {
        add(a, t, metric_event::pass);
      }
    });
  }
  for (auto& th : pool) th.join();
  EXPECT_EQ(value_at(a, t, metric_event::pass), static_cast<std::uint64_t>(threads * per_thread));
}

TEST(LeapArray, ConcurrentRotationCountsEveryEventOfItsOwnWindow) {
  // Writers race on windows that keep rotating; every window's total must be exact.
  bucket_array a(2, 1000);
  constexpr int threads = 4;
  constexpr int windows = 200;
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([&] {
      for (int w = 0; w < windows; ++w) {
        for (int j = 0; j < 50; ++j) {
          add(a, 1'000'000 + w * 500, metric_event::pass);
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  // The last two windows were never recycled afterwards: their totals are exact.
  const std::int64_t last = 1'000'000 + (windows - 1) * 500;
  EXPECT_EQ(value_at(a, last, metric_event::pass), static_cast<std::uint64_t>(threads * 50));
  EXPECT_EQ(sum(a, last, metric_event::pass), static_cast<std::uint64_t>(threads * 50 * 2));
}

}  // namespace
}  // namespace floodgate::stat

namespace floodgate::stat {
namespace {

TEST(FastDivider, MatchesIntegerDivision) {
  for (std::int64_t d : {1, 2, 3, 7, 10, 200, 333, 500, 1000, 60000}) {
    const fast_divider div(d);
    for (std::int64_t t : {std::int64_t{0}, std::int64_t{1}, d - 1, d, d + 1,
                           std::int64_t{1'000'000}, std::int64_t{1'700'000'000'123},
                           (std::int64_t{1} << 40) - 1, std::int64_t{1} << 41}) {
      EXPECT_EQ(div.divide(t), t / d) << t << " / " << d;
      EXPECT_EQ(div.modulo(t), t % d) << t << " % " << d;
    }
    for (std::int64_t t = 0; t < 100'000; t += 7) {
      ASSERT_EQ(div.divide(t), t / d);
    }
  }
}

}  // namespace
}  // namespace floodgate::stat
