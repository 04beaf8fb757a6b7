// The admission window: exact QPS admission without check-then-act overshoot.
#include <floodgate/chain/clock.hpp>
#include "flow/admission_window.hpp"

#include "lib/support/cpu_pin.hpp"
#include "stat/writer_shard.hpp"

#include <gtest/gtest.h>

#include <latch>

#include <algorithm>
#include <map>
#include <thread>
#include <vector>

namespace floodgate::flow {
namespace {

const window_shape two_halves{stat::window_config{}};  // Sentinel's 2 x 500 ms

TEST(AdmissionWindow, AdmitsCountPerSecondThenBlocks) {
  admission_window w;
  const std::int64_t t = 1'000'000;
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(w.admit(t, 1, 10, two_halves).admitted) << i;
  }
  const auto blocked = w.admit(t, 1, 10, two_halves);
  EXPECT_FALSE(blocked.admitted);
  EXPECT_EQ(w.booked(t / 500), 10u);
}

TEST(AdmissionWindow, AThreadBooksAheadWhileFarFromFullAndStillGetsExactlyCount) {
  const test::cpu_pin pin;
  if (!pin.per_cpu()) GTEST_SKIP() << "no per-CPU writer shard here (no rseq, or TSan)";
  admission_window w;
  const std::int64_t t = 1'000'000;
  ASSERT_TRUE(w.admit(t, 1, 5000, two_halves).admitted);
  EXPECT_GT(w.booked(t / 500), 1u);  // a lease: passes booked ahead for this thread
  EXPECT_LE(w.booked(t / 500), 1u + admission_window::max_lease);
  int admitted = 1;
  while (w.admit(t, 1, 5000, two_halves).admitted) {
    ++admitted;
  }
  EXPECT_EQ(admitted, 5000);  // leases shrink to nothing: the last passes are booked one by one
  EXPECT_EQ(w.booked(t / 500), 5000u);
}

TEST(AdmissionWindow, ALeaseLeftFromAnEarlierWindowIsGivenBack) {
  const test::cpu_pin pin;
  if (!pin.per_cpu()) GTEST_SKIP() << "no per-CPU writer shard here (no rseq, or TSan)";
  admission_window w;
  const std::int64_t t = 1'000'000;
  ASSERT_TRUE(w.admit(t, 1, 5000, two_halves).admitted);
  ASSERT_GT(w.booked(t / 500), 1u);
  ASSERT_TRUE(w.admit(t + 500, 1, 5000, two_halves).admitted);
  EXPECT_EQ(w.booked(t / 500), 1u);  // only the pass that was used stays booked
}

TEST(AdmissionWindow, ALeaseDatedAfterTheNextBookingIsGivenBack) {
  const test::cpu_pin pin;
  if (!pin.per_cpu()) GTEST_SKIP() << "no per-CPU writer shard here (no rseq, or TSan)";
  const window_shape one_second{
      stat::window_config{.second_sample_count = 1, .second_interval_ms = 1000}};
  admission_window w;
  const std::int64_t t = 1'000'000;
  // An entry whose clock reads the next second books there, with a lease...
  ASSERT_TRUE(w.admit(t + 1000, 1, 5000, one_second).admitted);
  ASSERT_GT(w.booked(t / 1000 + 1), 1u);
  // ...then the next entry on this CPU reads the current second.
  ASSERT_TRUE(w.admit(t, 1, 5000, one_second).admitted);
  EXPECT_EQ(w.booked(t / 1000 + 1), 1u);  // only the pass that was used stays booked there
}

TEST(AdmissionWindow, AnIdleLeaseIsTakenBackAfterItsLeasePeriod) {
  admission_window w;
  const std::int64_t t = 1'000'000;
  bool per_cpu = false;
  std::thread([&] {
    const test::cpu_pin pin;  // one entry on some CPU, then that CPU's threads go idle
    per_cpu = pin.per_cpu();
    if (per_cpu) {
      ASSERT_TRUE(w.admit(t, 1, 100, two_halves).admitted);
    }
  }).join();
  if (!per_cpu) GTEST_SKIP() << "no per-CPU writer shard here (no rseq, or TSan)";
  ASSERT_GT(w.booked(t / 500), 1u);  // passes leased to that CPU's shard
  const stat::shared_shard_scope elsewhere;  // the other requests come from no CPU's shard
  int admitted = 1;
  while (w.admit(t, 1, 100, two_halves).admitted) ++admitted;
  EXPECT_LT(admitted, 100);  // the lease is young: still its shard's
  while (w.admit(t + 10, 1, 100, two_halves).admitted) ++admitted;  // one lease period later
  EXPECT_EQ(admitted, 100);
  EXPECT_EQ(w.booked(t / 500), 100u);
}

TEST(AdmissionWindow, NoLeaseOutsideAOneSecondInterval) {
  const window_shape two_seconds{stat::window_config{.second_interval_ms = 2000}};
  admission_window w;
  const std::int64_t t = 1'000'000;
  ASSERT_TRUE(w.admit(t, 1, 5000, two_seconds).admitted);
  EXPECT_EQ(w.booked(t / 1000), 1u);
}

TEST(AdmissionWindow, TruncatesLikeSentinel) {
  // (int) passQps + acquire <= count: count 10.9 still admits 10, not 11.
  admission_window w;
  int admitted = 0;
  for (int i = 0; i < 20; ++i) {
    admitted += w.admit(1'000'000, 1, 10.9, two_halves).admitted ? 1 : 0;
  }
  EXPECT_EQ(admitted, 10);
}

TEST(AdmissionWindow, SlidesHalfASecondAtATime) {
  admission_window w;
  const std::int64_t t = 1'000'000;  // start of a window
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(w.admit(t, 1, 10, two_halves).admitted);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(w.admit(t + 500, 1, 10, two_halves).admitted);
  EXPECT_FALSE(w.admit(t + 999, 1, 10, two_halves).admitted);
  // At t + 1000 the first half (6 passes) leaves the interval.
  int admitted = 0;
  for (int i = 0; i < 10; ++i) admitted += w.admit(t + 1000, 1, 10, two_halves).admitted ? 1 : 0;
  EXPECT_EQ(admitted, 6);
}

TEST(AdmissionWindow, RetryAfterIsTheTimeUntilEnoughOfTheWindowSlidesOut) {
  admission_window w;
  const std::int64_t t = 1'000'000;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(w.admit(t + 100, 1, 5, two_halves).admitted);
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(w.admit(t + 600, 1, 5, two_halves).admitted);
  // At t + 700 the window [t, t+500) with 3 passes leaves at t + 1000: 300 ms.
  EXPECT_EQ(w.admit(t + 700, 1, 5, two_halves).retry_after_ms, 300);
  // Needing 4 tokens, both windows must go: the second leaves at t + 1500.
  EXPECT_EQ(w.admit(t + 700, 4, 5, two_halves).retry_after_ms, 800);
}

TEST(AdmissionWindow, RefundGivesBackABookedPass) {
  admission_window w;
  const std::int64_t t = 1'000'000;
  ASSERT_TRUE(w.admit(t, 1, 1, two_halves).admitted);
  ASSERT_FALSE(w.admit(t, 1, 1, two_halves).admitted);
  w.refund(t / 500, 1);
  EXPECT_TRUE(w.admit(t, 1, 1, two_halves).admitted);
}

// A refusal is remembered for the rest of its millisecond (a flood of refused entries skips the
// sums), but only for the same request: another count or acquire is decided afresh.
TEST(AdmissionWindow, ARefusalIsReusedOnlyForTheSameCountAndAcquire) {
  admission_window w;
  const std::int64_t t = 1'000'000;
  ASSERT_TRUE(w.admit(t, 1, 2, two_halves).admitted);
  ASSERT_FALSE(w.admit(t, 2, 2, two_halves).admitted);
  ASSERT_FALSE(w.admit(t, 2, 2, two_halves).admitted);
  EXPECT_TRUE(w.admit(t, 1, 2, two_halves).admitted);  // other acquire: one pass still fits
  EXPECT_FALSE(w.admit(t, 1, 2, two_halves).admitted);
  EXPECT_TRUE(w.admit(t, 1, 3, two_halves).admitted);  // other count: room again
  EXPECT_FALSE(w.admit(t + 1, 1, 3, two_halves).admitted);
}

TEST(AdmissionWindow, LateClockReadingIsBlockedOnceALaterWindowSealedIt) {
  admission_window w;
  const std::int64_t t = 1'000'000;
  ASSERT_TRUE(w.admit(t + 500, 1, 10, two_halves).admitted);  // seals [t, t+500)
  const auto late = w.admit(t + 499, 1, 10, two_halves);
  EXPECT_FALSE(late.admitted);
  EXPECT_GE(late.retry_after_ms, 1);
}

TEST(AdmissionWindow, OccupyNextBooksTheComingWindow) {
  admission_window w;
  const std::int64_t t = 1'000'000;
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(w.admit(t + 100, 1, 2, two_halves).admitted);
  ASSERT_FALSE(w.admit(t + 600, 1, 2, two_halves).admitted);
  // At t + 1000 the first window leaves: borrow into [t+1000, t+1500).
  const auto o = w.occupy_next(t + 600, 1, 2, 500, two_halves);
  ASSERT_TRUE(o.booked);
  EXPECT_EQ(o.start_ms, t + 1000);
  EXPECT_EQ(w.booked(o.window), 1u);
  // The borrowed pass counts in its window: one more fits there, then it is full.
  EXPECT_TRUE(w.admit(t + 1000, 1, 2, two_halves).admitted);
  EXPECT_FALSE(w.admit(t + 1000, 1, 2, two_halves).admitted);
}

TEST(AdmissionWindow, OccupyNextRespectsTheOccupyTimeout) {
  admission_window w;
  const std::int64_t t = 1'000'000;
  ASSERT_TRUE(w.admit(t + 100, 1, 1, two_halves).admitted);
  // The next window starts in 400 ms: a 300 ms timeout is too short.
  EXPECT_FALSE(w.occupy_next(t + 100, 1, 1, 300, two_halves).booked);
  // Nothing frees before t + 1000, 900 ms away: even 500 ms is too short.
  EXPECT_FALSE(w.occupy_next(t + 100, 1, 1, 500, two_halves).booked);
}

TEST(AdmissionWindow, SupportsUpToSixteenSamplesThatDivideTheInterval) {
  const auto supports = [](stat::window_config cfg) {
    return admission_window::supports(window_shape{cfg});
  };
  EXPECT_TRUE(supports({.second_sample_count = 8}));
  EXPECT_TRUE(supports({.second_sample_count = 16, .second_interval_ms = 1600}));
  EXPECT_FALSE(supports({.second_sample_count = 17, .second_interval_ms = 1700}));
  EXPECT_FALSE(supports({.second_sample_count = 3}));  // 1000 % 3 != 0
}

TEST(AdmissionWindow, TenSamplesSlideOneTenthAtATime) {
  admission_window w;
  const window_shape tenths{stat::window_config{.second_sample_count = 10}};
  const std::int64_t t = 1'000'000;
  for (int k = 0; k < 10; ++k) ASSERT_TRUE(w.admit(t + k * 100, 1, 10, tenths).admitted);
  EXPECT_FALSE(w.admit(t + 999, 1, 10, tenths).admitted);
  EXPECT_TRUE(w.admit(t + 1000, 1, 10, tenths).admitted);
  EXPECT_FALSE(w.admit(t + 1000, 1, 10, tenths).admitted);
}

// Threads race on one window while they themselves move the manual clock in small steps (so some
// act on a reading another thread has already left behind); every admission is recorded with the
// clock reading it was made at. No sliding interval may hold more than `count`, and the flood
// must still get `count` through in most intervals.
void race(int threads, double count, const stat::window_config& cfg) {
  const window_shape shape{cfg};
  manual_clock clock{1'000'000};
  const std::int64_t end = clock.now_ms() + 10'000;
  admission_window w;
  std::vector<std::vector<std::int64_t>> admitted(static_cast<std::size_t>(threads));
  std::latch start(threads);
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([&, i] {
      auto& mine = admitted[static_cast<std::size_t>(i)];
      start.arrive_and_wait();
      std::uint32_t rng = 2463534242u + static_cast<std::uint32_t>(i);
      for (;;) {
        const std::int64_t now = clock.now_ms();
        if (now >= end) break;
        if (w.admit(now, 1, count, shape).admitted) mine.push_back(now);
        // Uneven steps: some windows fill early, others end with room left, so that threads
        // still holding the old reading race the first admissions of the next window.
        rng ^= rng << 13;
        rng ^= rng >> 17;
        rng ^= rng << 5;
        if (rng % 16 == 0) clock.advance_ms(rng % 7 == 0 ? 5 : 1);
      }
    });
  }
  for (auto& t : pool) t.join();

  const std::int64_t window_ms = cfg.second_interval_ms / cfg.second_sample_count;
  std::map<std::int64_t, std::int64_t> per_window;
  for (const auto& v : admitted) {
    for (const auto ms : v) ++per_window[ms / window_ms];
  }
  ASSERT_FALSE(per_window.empty());
  const auto first = per_window.begin()->first;
  const auto last = per_window.rbegin()->first;
  int full = 0;
  int intervals = 0;
  for (auto wnd = first + cfg.second_sample_count - 1; wnd <= last; ++wnd) {
    std::int64_t interval = 0;
    for (int k = 0; k < cfg.second_sample_count; ++k) {
      const auto it = per_window.find(wnd - k);
      interval += it == per_window.end() ? 0 : it->second;
    }
    ASSERT_LE(interval, static_cast<std::int64_t>(count)) << "window " << wnd;
    full += interval == static_cast<std::int64_t>(count) ? 1 : 0;
    ++intervals;
  }
  EXPECT_GT(2 * full, intervals) << full << " of " << intervals << " intervals passed the count";
}

TEST(AdmissionWindow, TwoRacingThreadsNeverAdmitMoreThanCountPerWindow) {
  race(2, 50, {});
  race(2, 5000, {});
}
TEST(AdmissionWindow, FourRacingThreadsNeverAdmitMoreThanCountPerWindow) {
  race(4, 50, {});
  race(4, 5000, {});
}
TEST(AdmissionWindow, EightRacingThreadsNeverAdmitMoreThanCountPerWindow) {
  race(8, 50, {});
  race(8, 5000, {});
}
TEST(AdmissionWindow, RacingThreadsWithTenSamplesNeverOvershoot) {
  race(4, 30, {.second_sample_count = 10});
  race(4, 3000, {.second_sample_count = 10});
}

TEST(AdmissionWindow, RacingBorrowersAndAdmittersNeverOvershoot) {
  manual_clock clock{1'000'000};
  const std::int64_t end = clock.now_ms() + 10'000;
  admission_window w;
  const double count = 20;
  // Recorded by the window each pass counts in.
  std::vector<std::vector<std::int64_t>> booked(4);
  std::latch start(4);
  std::vector<std::thread> pool;
  for (int i = 0; i < 4; ++i) {
    pool.emplace_back([&, i] {
      auto& mine = booked[static_cast<std::size_t>(i)];
      start.arrive_and_wait();
      for (int k = 1;; ++k) {
        const std::int64_t now = clock.now_ms();
        if (now >= end) break;
        const auto a = w.admit(now, 1, count, two_halves);
        if (a.admitted) {
          mine.push_back(a.window);
        } else if (i % 2 == 0) {
          const auto o = w.occupy_next(now, 1, count, 500, two_halves);
          if (o.booked) mine.push_back(o.window);
        }
        if (k % 32 == 0) clock.advance_ms(2);
      }
    });
  }
  for (auto& t : pool) t.join();
  std::map<std::int64_t, std::int64_t> per_window;
  for (const auto& v : booked) {
    for (const auto wnd : v) ++per_window[wnd];
  }
  ASSERT_FALSE(per_window.empty());
  for (const auto& [wnd, n] : per_window) {
    const auto prev = per_window.find(wnd - 1);
    const std::int64_t interval = n + (prev == per_window.end() ? 0 : prev->second);
    ASSERT_LE(interval, static_cast<std::int64_t>(count)) << "window " << wnd;
  }
}

}  // namespace
}  // namespace floodgate::flow
