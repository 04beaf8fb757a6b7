// Rules after a long quiet spell, and clocks that step back: a window's cells carry its number
// modulo 2^24, and a cell left alone long enough must still read as old (tagged_cell.hpp).
#include <floodgate/engine/engine.hpp>

#include "stat/tagged_cell.hpp"

#include <gtest/gtest.h>

#include <cstdint>

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
  eng.enter(ctx, "res");  // a good probe closes it
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
  eng.enter(ctx, "res");
  clock.advance_ms(1000);
  eng.enter(ctx, "res");  // the node keeps a minute window from its second window on
  clock.set_ms(0);
  EXPECT_TRUE(eng.enter(ctx, "res"));
  clock.advance_ms(1000);
  EXPECT_TRUE(eng.enter(ctx, "res"));
}

}  // namespace
}  // namespace floodgate
