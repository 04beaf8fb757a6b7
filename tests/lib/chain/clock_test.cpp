// The steady clock's millisecond ticker: when it runs (Sentinel's TimeUtil states) and what
// its readings promise.
#include "chain/clock_offset.hpp"
#include "chain/ticker_schedule.hpp"

#include <floodgate/chain/clock.hpp>
#include <floodgate/engine/engine.hpp>

#include "node/node_registry.hpp"

#include <gtest/gtest.h>

#include <time.h>

#include <algorithm>
#include <limits>

namespace floodgate::detail {
namespace {

using state = ticker_schedule::state;

/// CLOCK_MONOTONIC as the steady clock shifts it (to start its seconds with the wall clock's).
std::int64_t monotonic_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return (static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec +
          steady_clock_offset_ns()) /
         1'000'000;
}

std::int64_t wall_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

/// Runs the schedule through one second of running ticks; returns the step that ends it.
ticker_schedule::step run_one_second(ticker_schedule& s) {
  for (int i = 1; i < ticker_schedule::probe_every; ++i) {
    const auto step = s.next(0);
    EXPECT_EQ(step.next, state::running);
    EXPECT_EQ(step.sleep, ticker_schedule::tick);
  }
  return s.next(0);
}

TEST(TickerSchedule, RunsEveryMillisecondThenProbesOnceASecond) {
  ticker_schedule s;
  EXPECT_EQ(ticker_schedule::start().next, state::running);
  EXPECT_EQ(ticker_schedule::start().sleep, ticker_schedule::tick);
  const auto probe = run_one_second(s);
  EXPECT_EQ(probe.next, state::probing);
  EXPECT_EQ(probe.sleep, ticker_schedule::probe_window);
}

TEST(TickerSchedule, AProbeWithEnoughReadsKeepsItRunning) {
  ticker_schedule s;
  run_one_second(s);
  const auto step = s.next(ticker_schedule::keep_reads);  // 800 reads a second
  EXPECT_EQ(step.next, state::running);
  EXPECT_EQ(step.sleep, ticker_schedule::tick);
  EXPECT_EQ(run_one_second(s).next, state::probing);  // and probes again a second later
}

TEST(TickerSchedule, AProbeWithFewReadsIdlesItUntilReadsComeBack) {
  ticker_schedule s;
  run_one_second(s);
  auto step = s.next(ticker_schedule::keep_reads - 1);
  EXPECT_EQ(step.next, state::idle);
  EXPECT_EQ(step.sleep, ticker_schedule::idle_poll);
  // Idle: fewer than 1000 reads a second keep it idle (hysteresis above the 800 that keep it
  // running), and the poll sleeps 10 ms, not 1.
  for (int i = 0; i < 100; ++i) {
    step = s.next(ticker_schedule::resume_reads - 1);
    EXPECT_EQ(step.next, state::idle);
    EXPECT_EQ(step.sleep, ticker_schedule::idle_poll);
  }
  step = s.next(ticker_schedule::resume_reads);
  EXPECT_EQ(step.next, state::running);
  EXPECT_EQ(step.sleep, ticker_schedule::tick);
  EXPECT_EQ(s.current(), state::running);
}

TEST(TickerSchedule, AnIdleTickerWakesAtMostAHundredTimesASecond) {
  ticker_schedule s;
  run_one_second(s);
  s.next(0);
  std::chrono::milliseconds slept{0};
  int wakeups = 0;
  while (slept < std::chrono::seconds(1)) {
    slept += s.next(0).sleep;
    ++wakeups;
  }
  EXPECT_EQ(wakeups, 100);
}

TEST(SteadyClock, MillisecondsNeverRunAheadOfTheMonotonicClock) {
  const clock& c = default_clock();
  for (int i = 0; i < 10'000; ++i) {
    const std::int64_t ms = c.now_ms();
    EXPECT_LE(ms, monotonic_ms());
    EXPECT_GE(ms, 0);  // never the ticker's idle marker
  }
}

// A client counts per wall-clock second: the windows (multiples of 500 ms and 1 s on this clock)
// must begin when its seconds do, or one wall-clock second could hold the count of two windows.
// Before, the steady clock was CLOCK_MONOTONIC itself, whose seconds begin at an arbitrary point
// of the wall clock's.
TEST(SteadyClock, ItsSecondsBeginWithTheWallClocks) {
  const clock& c = default_clock();
  std::int64_t closest = std::numeric_limits<std::int64_t>::max();
  for (int i = 0; i < 100; ++i) {  // the pair read closest together: a preempted read is off
    const std::int64_t wall_before = wall_ms();
    const std::int64_t ns = c.now_ns();
    const std::int64_t wall_after = wall_ms();
    if (wall_after - wall_before > 1) continue;
    constexpr std::int64_t day_ms = 86'400'000;
    const std::int64_t off = ((ns / 1'000'000 - wall_before) % day_ms + day_ms) % day_ms;
    closest = std::min(closest, std::min(off, day_ms - off));
  }
  EXPECT_LE(closest, 2) << "ms between the steady clock and the wall clock, modulo a day";
  EXPECT_GE(steady_clock_offset_ns(), 0);
  EXPECT_LT(steady_clock_offset_ns(), std::int64_t{86'400} * 1'000'000'000);
}

TEST(SteadyClock, PreciseEntriesTakeTheirMillisecondsFromTheSameReading) {
  // With the production clock, a precise entry's RT comes from nanosecond readings: it is never
  // negative and the duration histogram sees the entry.
  engine eng;
  context ctx(eng, "clock-test");
  const std::int64_t before = monotonic_ms();
  {
    entry e = eng.enter(ctx, "clock-resource", {.precise_duration = true});
    ASSERT_TRUE(e.passed());
  }
  const std::int64_t after = monotonic_ms();
  const auto* node = eng.nodes().find_resource("clock-resource");
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->totals().completed(), 1u);
  // The exit is recorded in a window between the two readings around it.
  std::uint64_t seen = 0;
  for (std::int64_t ms = before; ms <= after + 1; ++ms) {
    seen = std::max<std::uint64_t>(seen, node->total_success(ms));
  }
  EXPECT_EQ(seen, 1u);
}

}  // namespace
}  // namespace floodgate::detail
