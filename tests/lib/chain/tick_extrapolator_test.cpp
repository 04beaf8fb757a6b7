// The steady clock's nanoseconds from a tick counter: calibration, extrapolation, re-anchoring
// and the counter jumps, driven with a manual counter and a manual reference.
#include "chain/clock_offset.hpp"
#include "chain/tick_extrapolator.hpp"

#include <floodgate/chain/clock.hpp>

#include <gtest/gtest.h>

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace floodgate::detail {
namespace {

using sample = tick_extrapolator::sample;

/** A counter at `ticks_per_us` ticks a microsecond and a reference that says `ns`; the two
    advance together unless a test moves one alone. Counts the reference reads. */
struct sources {
  std::uint64_t ticks = 1'000'000;
  std::int64_t ns = 5'000'000'000;
  int reference_reads = 0;

  void advance_ns(std::int64_t d, double ticks_per_ns = 3.0) {
    ns += d;
    ticks += static_cast<std::uint64_t>(static_cast<double>(d) * ticks_per_ns);
  }
  std::int64_t read(tick_extrapolator& x) {
    return x.now(ticks, [this] {
      ++reference_reads;
      return sample{ticks, ns};
    });
  }
};

/// Calibrates `x` on `s` (3 ticks a nanosecond): one sample, then one past the baseline.
void calibrate(tick_extrapolator& x, sources& s) {
  s.read(x);
  s.advance_ns(tick_extrapolator::calibration_ns);
  s.read(x);
  ASSERT_TRUE(x.calibrated());
}

TEST(TickExtrapolator, AnswersTheReferenceUntilTheBaselineIsLongEnough) {
  tick_extrapolator x;
  sources s;
  EXPECT_EQ(s.read(x), s.ns);
  s.advance_ns(tick_extrapolator::calibration_ns - 1);
  EXPECT_EQ(s.read(x), s.ns);
  EXPECT_FALSE(x.calibrated());
  EXPECT_EQ(s.reference_reads, 2);
  s.advance_ns(1);
  EXPECT_EQ(s.read(x), s.ns);  // the first anchor is this very sample
  EXPECT_TRUE(x.calibrated());
}

TEST(TickExtrapolator, ExtrapolatesWithoutReadingTheReference) {
  tick_extrapolator x;
  sources s;
  calibrate(x, s);
  const int reads = s.reference_reads;
  for (int i = 0; i < 1000; ++i) {
    s.advance_ns(33'333);  // 33 ms in all: inside the first anchor's tenth of a period
    EXPECT_NEAR(static_cast<double>(s.read(x)), static_cast<double>(s.ns), 1.0);
  }
  EXPECT_EQ(s.reference_reads, reads);
}

TEST(TickExtrapolator, ReanchorsOnceAPeriodAndMeetsTheReference) {
  tick_extrapolator x;
  sources s;
  calibrate(x, s);
  const int reads = s.reference_reads;
  s.advance_ns(tick_extrapolator::refresh_ns);
  s.read(x);  // past the period: re-anchors
  EXPECT_EQ(s.reference_reads, reads + 1);
  s.advance_ns(tick_extrapolator::refresh_ns / 2);
  EXPECT_NEAR(static_cast<double>(s.read(x)), static_cast<double>(s.ns), 1.0);
  EXPECT_EQ(s.reference_reads, reads + 1);
}

TEST(TickExtrapolator, AFastCounterIsSlewedNotSteppedBack) {
  // The counter runs 100 ppm fast against the reference after calibration: the extrapolation
  // runs ahead, and a re-anchor must neither step back nor keep the error.
  tick_extrapolator x;
  sources s;
  calibrate(x, s);
  std::int64_t last = s.read(x);
  std::int64_t worst_error = 0;
  for (int step = 0; step < 60; ++step) {  // three periods, in 50 ms steps
    s.advance_ns(50'000'000, 3.0 * 1.0001);
    const std::int64_t now = s.read(x);
    EXPECT_GE(now, last) << "step " << step;
    last = now;
    if (step >= 40) {
      worst_error = std::max(worst_error, now - s.ns > 0 ? now - s.ns : s.ns - now);
    }
  }
  // After two re-anchors the rate comes from a baseline where the counter ran fast for most
  // of the time: the error left is what one 50 ms step and the slew carry, far under 100 ppm
  // of the three seconds (300 µs) that an unslewed rate would have gathered.
  EXPECT_LT(worst_error, 20'000);
}

TEST(TickExtrapolator, ACounterThatJumpsRestartsFromTheReference) {
  tick_extrapolator x;
  sources s;
  calibrate(x, s);
  s.advance_ns(tick_extrapolator::refresh_ns);
  s.ticks += 3ULL * 10'000'000'000ULL;  // ten seconds of ticks the reference did not see
  s.read(x);                            // re-anchors: the jump is far past max_drift_ns
  s.advance_ns(1'000'000);
  EXPECT_NEAR(static_cast<double>(s.read(x)), static_cast<double>(s.ns), 1.0);
}

TEST(TickExtrapolator, ARateFromAStretchedSampleIsCalibratedAgain) {
  // The calibration's second reference read ran 2 ms after its tick count (a thread preempted
  // in between, as under a loaded CI machine): the first rate is 20 % fast. The first re-anchor
  // finds the extrapolation far off and must calibrate again, not keep that rate.
  tick_extrapolator x;
  sources s;
  s.read(x);
  s.advance_ns(tick_extrapolator::calibration_ns);
  x.now(s.ticks, [&] { return sample{s.ticks, s.ns + 2'000'000}; });
  ASSERT_TRUE(x.calibrated());
  std::int64_t worst = 0;
  for (int step = 0; step < 60; ++step) {  // three seconds in 50 ms steps
    s.advance_ns(50'000'000);
    const std::int64_t now = s.read(x);
    if (step >= 20) {
      worst = std::max(worst, now > s.ns ? now - s.ns : s.ns - now);
    }
  }
  EXPECT_LT(worst, 1'000);
}

TEST(TickExtrapolator, ACounterThatGoesBackRestartsFromTheReference) {
  // A counter reset under the process (a resume that restarted it): readings far before the
  // anchor must not extrapolate backwards forever.
  tick_extrapolator x;
  sources s;
  calibrate(x, s);
  s.advance_ns(50'000'000);
  s.ticks = 1'000;  // the counter starts over; the reference goes on
  EXPECT_NEAR(static_cast<double>(s.read(x)), static_cast<double>(s.ns), 1.0);
  s.advance_ns(1'000'000);
  EXPECT_NEAR(static_cast<double>(s.read(x)), static_cast<double>(s.ns), 1.0);
}

TEST(TickExtrapolator, AReadBeforeTheAnchorIsPlacedBeforeIt) {
  // A thread that read the counter, then saw an anchor published after that read.
  tick_extrapolator x;
  sources s;
  calibrate(x, s);
  const std::uint64_t early = s.ticks - 3'000;  // 1 µs before the anchor
  const std::int64_t at = x.now(early, [&] { return sample{s.ticks, s.ns}; });
  EXPECT_NEAR(static_cast<double>(at), static_cast<double>(s.ns - 1'000), 1.0);
}

/// CLOCK_MONOTONIC as the steady clock shifts it (to start its seconds with the wall clock's).
std::int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec +
         steady_clock_offset_ns();
}

TEST(SteadyClock, NanosecondsStayWithClockMonotonicAndNeverStepBack) {
  // The production clock, whatever stands behind it here (the TSC or the vDSO): each thread's
  // readings never decrease, and each lies between two CLOCK_MONOTONIC reads around it (give or
  // take the extrapolation's error, bounded by max_drift_ns). The threads read for longer than
  // one refresh period, so at least one re-anchor happens while they read.
  const steady_clock clk;
  const std::int64_t until = monotonic_ns() + tick_extrapolator::refresh_ns + 200'000'000;
  std::vector<std::thread> threads;
  std::vector<int> failures(3, 0);
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      std::int64_t last = clk.now_ns();
      while (monotonic_ns() < until) {
        const std::int64_t before = monotonic_ns();
        const std::int64_t now = clk.now_ns();
        const std::int64_t after = monotonic_ns();
        if (now < last || now < before - tick_extrapolator::max_drift_ns ||
            now > after + tick_extrapolator::max_drift_ns) {
          ++failures[t];
        }
        last = now;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 3; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace floodgate::detail
