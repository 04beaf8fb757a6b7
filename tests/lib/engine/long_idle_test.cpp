// Rules after a long quiet spell, and clocks that step back: a window's cells carry its number
// modulo 2^24, and a cell left alone long enough must still read as old (tagged_cell.hpp).
#include <floodgate/engine/engine.hpp>

#include "lib/support/cpu_pin.hpp"
#include "node/node_registry.hpp"
#include "stat/tagged_cell.hpp"
#include "stat/writer_shard.hpp"

#include <gtest/gtest.h>

#include <pthread.h>
#include <sched.h>

#include <array>
#include <cstdint>
#include <functional>
#include <thread>

namespace floodgate {
namespace {

constexpr std::int64_t half_cycle = std::int64_t{1} << 23;  // windows

TEST(CellTags, OnlyACellAFewWindowsAheadIsANewerWindow) {
  using stat::cell_tag;
  using stat::cell_tag_newer;
  EXPECT_TRUE(cell_tag_newer(cell_tag(101), cell_tag(100)));
  EXPECT_FALSE(cell_tag_newer(cell_tag(100), cell_tag(101)));  // a late writer
  EXPECT_FALSE(cell_tag_newer(cell_tag(100), cell_tag(100 + stat::cell_tag_lead)));
  EXPECT_TRUE(cell_tag_newer(cell_tag(100), cell_tag(100 + stat::cell_tag_lead + 1)));
  // A cell untouched for half the cycle or more is older, not "ahead" of the writer.
  EXPECT_TRUE(cell_tag_newer(cell_tag(100 + half_cycle), cell_tag(100)));
  EXPECT_TRUE(cell_tag_newer(cell_tag(100 + half_cycle + 12345), cell_tag(100)));
  EXPECT_TRUE(
      cell_tag_newer(cell_tag(100 + 2 * half_cycle - stat::cell_tag_lead - 1), cell_tag(100)));
}

// An audit (UBSan sweep): after 2^23 windows without traffic (48.5 days of 500 ms windows) a QPS
// rule refused every request, and did so for up to another 48 days.
TEST(LongIdle, AQpsRulePassesItsCountAfterFiftyDaysWithoutTraffic) {
  manual_clock clock;
  engine eng{engine_options{.time = &clock}};
  ASSERT_TRUE(eng.load_rules({.flow = {{.resource = "res", .count = 2}}}));
  context ctx{eng, "ctx"};
  const auto passes = [&] {
    int n = 0;
    for (int i = 0; i < 10; ++i) n += eng.enter(ctx, "res").passed() ? 1 : 0;
    return n;
  };
  ASSERT_EQ(passes(), 2);
  clock.advance_ms(half_cycle * 500 + 500);
  for (int s = 0; s < 5; ++s) {
    EXPECT_EQ(passes(), 2) << "second " << s << " after the quiet spell";
    clock.advance_ms(1000);
  }
  clock.advance_ms(30LL * 86'400'000);  // well into the second half of the tag cycle
  EXPECT_EQ(passes(), 2);
}

int opens_after_errors(engine& eng, context& ctx, int errors) {
  for (int i = 0; i < errors; ++i) {
    entry e = eng.enter(ctx, "res");
    if (e.blocked()) return i;
    e.trace_error();
  }
  return eng.enter(ctx, "res").blocked() ? errors : -1;
}

// The same for a breaker's window: statIntervalMs 1 wrapped after 2.3 hours, and the breaker
// dropped every completion from then on.
TEST(LongIdle, AnErrorCountBreakerStillOpensAfterHalfItsTagCycle) {
  manual_clock clock;
  engine eng{engine_options{.time = &clock}};
  ASSERT_TRUE(eng.load_rules({.degrade = {{.resource = "res",
                                           .grade = degrade_grade::error_count,
                                           .count = 2,
                                           .min_request_amount = 1,
                                           .stat_interval_ms = 1,
                                           .time_window_sec = 10}}}));
  context ctx{eng, "ctx"};
  ASSERT_EQ(opens_after_errors(eng, ctx, 3), 3);  // the third error trips it
  clock.advance_ms(11'000);
  ASSERT_TRUE(eng.enter(ctx, "res"));  // a good probe (exits at once) closes it
  clock.advance_ms(half_cycle + 1);
  EXPECT_EQ(opens_after_errors(eng, ctx, 3), 3);
}

// And for the adaptive breaker: 250 ms buckets (statIntervalMs 10 000) wrapped after 24 days,
// and it shed nothing however the dependency failed.
TEST(LongIdle, TheAdaptiveBreakerStillShedsAfterHalfItsTagCycle) {
  manual_clock clock;
  engine eng{engine_options{.time = &clock}};
  ASSERT_TRUE(eng.load_rules({.degrade = {{.resource = "res",
                                           .grade = degrade_grade::adaptive,
                                           .min_request_amount = 5,
                                           .stat_interval_ms = 10'000,
                                           .k = 1.5}}}));
  context ctx{eng, "ctx"};
  const auto shed_of_failing = [&](int n) {
    int shed = 0;
    for (int i = 0; i < n; ++i) {
      entry e = eng.enter(ctx, "res");
      if (e.blocked()) {
        ++shed;
      } else {
        e.trace_error();
      }
      clock.advance_ms(1);
    }
    return shed;
  };
  for (int i = 0; i < 40; ++i) {  // every 250 ms bucket of the interval holds a window
    shed_of_failing(10);
    clock.advance_ms(240);
  }
  ASSERT_GT(shed_of_failing(1000), 500);
  clock.advance_ms(half_cycle * 250 + 125);
  EXPECT_GT(shed_of_failing(1000), 500);
}

// A clock stepped back past the cells' lead (60 days to 0): the statistic node carried a
// displaced window to a negative second, an index before its minute buckets (ASan: SEGV).
TEST(LongIdle, AClockSteppedBackSixtyDaysWritesNothingOutsideItsBuckets) {
  manual_clock clock{60LL * 86'400'000};
  engine eng{engine_options{.time = &clock}};
  context ctx{eng, "ctx"};
  ASSERT_TRUE(eng.enter(ctx, "res"));
  clock.advance_ms(1000);
  ASSERT_TRUE(eng.enter(ctx, "res"));  // the node keeps a minute window from its second one on
  clock.set_ms(0);
  EXPECT_TRUE(eng.enter(ctx, "res"));
  clock.advance_ms(1000);
  EXPECT_TRUE(eng.enter(ctx, "res"));
}

// A review of the change above: a CPU shard's window from a day ago, displaced now, was carried
// into the minute bucket of its second, which a recent second shares (a day is a whole number of
// minutes), and replaced that second's count. Such a window is past the minute: it is dropped.
TEST(LongIdle, AShardsDayOldWindowDoesNotReplaceARecentSecondsCount) {
  const auto two = test::two_allowed_cpus();
  if (!two) GTEST_SKIP() << "needs two CPUs, one shard each";
  const std::array<int, 2> cpus = *two;
  manual_clock clock;
  engine eng{engine_options{.time = &clock}};
  context ctx{eng, "ctx"};
  bool per_cpu = true;
  const auto on_cpu = [&](int cpu, int entries) {  // one context, used by one thread at a time
    std::thread t([&] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0 ||
          !stat::this_thread_shard().exclusive) {
        per_cpu = false;  // no rseq (TSan): every thread writes the shared shard
        return;
      }
      for (int i = 0; i < entries; ++i) EXPECT_TRUE(eng.enter(ctx, "res"));
    });
    t.join();
  };
  on_cpu(cpus[0], 1);  // the window the first CPU's shard keeps for a day
  clock.advance_ms(86'400'000);
  on_cpu(cpus[1], 5);  // a recent second, in the minute bucket the day-old one maps to
  clock.advance_ms(1000);
  on_cpu(cpus[1], 1);  // its window moves on: the 5 are carried into the minute buckets
  on_cpu(cpus[0], 1);  // displaces the day-old window on the first CPU's shard
  if (!per_cpu) GTEST_SKIP() << "threads write the shared shard here (no rseq)";
  EXPECT_EQ(eng.nodes().find_resource("res")->total_pass(clock.now_ms()), 7u);
}

}  // namespace
}  // namespace floodgate
