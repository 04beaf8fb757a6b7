// The warm-up controller (Sentinel's WarmUpControllerTest) and its warm-up curve.
#include "flow/warm_up_controller.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace floodgate::flow {
namespace {

constexpr std::int64_t second = 1'000'000;  // a whole second, in ms

flow_request at(std::int64_t ms, std::uint32_t acquire = 1) {
  return {ms, ms * 1'000'000, acquire, false, 500};
}

/// A node with `previous` passes in the second before `now` and `current` in its sliding window.
struct node_state {
  stat::statistic_node node;
  node_state(std::int64_t now, std::uint64_t previous, std::uint64_t current) {
    const std::int64_t sec = now - now % 1000;
    if (previous > 0) node.add_pass(sec - 1000, static_cast<std::uint32_t>(previous));
    if (current > 0) node.add_pass(now, static_cast<std::uint32_t>(current));
  }
};

bool passes(const slot_verdict& v) { return v.outcome == slot_verdict::kind::pass; }

slot_verdict check(warm_up_controller& c, std::int64_t ms, const stat::statistic_node& n) {
  flow_booking booking;
  return c.check(at(ms), n, booking);
}

TEST(WarmUpController, TokensAndSlopeFollowSentinelsFormulas) {
  warm_up_controller c{10, 10};
  EXPECT_EQ(c.warning_token(), 50);
  EXPECT_EQ(c.max_token(), 100);
  EXPECT_DOUBLE_EQ(c.slope(), 0.004);
}

TEST(WarmUpController, AdmitsOneThirdOfCountWhenCold) {
  warm_up_controller c{10, 10};
  // A full bucket: 1 / (50 * 0.004 + 0.1) = 3.33 QPS.
  EXPECT_NEAR(c.allowed_qps(100), 10.0 / 3, 1e-9);
  EXPECT_DOUBLE_EQ(c.allowed_qps(49), 10);
}

TEST(WarmUpController, PassesAndBlocksAsSentinelsTest) {
  warm_up_controller c{10, 10};
  const std::int64_t t = second + 600;
  // passQps 8, previous 1: the first sync fills the bucket to 100, minus 1; limit ≈ 3.38.
  node_state busy{t, 1, 8};
  EXPECT_FALSE(passes(check(c, t, busy.node)));
  EXPECT_EQ(c.stored_tokens(), 99);
  EXPECT_NEAR(c.allowed_qps(99), 3.378, 1e-3);
  // passQps 1, previous 1: passes.
  node_state quiet{t, 1, 1};
  EXPECT_TRUE(passes(check(c, t, quiet.node)));

  // 10 QPS for 10 s, checked every 100 ms: 99 → 89 → … → 49, then refill = drain at 49.
  stat::statistic_node steady;
  for (std::int64_t ms = second - 1000; ms < t; ms += 100) steady.add_pass(ms, 1);
  std::vector<std::int64_t> per_second;
  for (std::int64_t ms = t; ms < t + 10'000; ms += 100) {
    steady.add_pass(ms, 1);
    check(c, ms, steady);
    if ((ms - t) % 1000 == 900) per_second.push_back(c.stored_tokens());
  }
  EXPECT_EQ(per_second, (std::vector<std::int64_t>{89, 79, 69, 59, 49, 49, 49, 49, 49, 49}));

  // Below the warning token the limit is count: passQps 8 passes, 10 is blocked.
  const std::int64_t later = t + 10'000;
  node_state eight{later, 10, 8};
  EXPECT_TRUE(passes(check(c, later, eight.node)));
  node_state ten{later, 10, 10};
  const auto v = check(c, later, ten.node);
  ASSERT_FALSE(passes(v));
  EXPECT_EQ(v.block.reason, block_reason::flow);
  EXPECT_GE(v.block.retry_after.count(), 1);
}

// Sentinel's limit is NaN there (0 * Infinity), which blocked every entry for ever.
TEST(WarmUpController, WithoutRoomToWarmUpTheLimitIsCount) {
  // period * count < 2: warning token = max token = 0.
  warm_up_controller one{1, 1};
  ASSERT_EQ(one.max_token(), 0);
  EXPECT_DOUBLE_EQ(one.allowed_qps(0), 1);
  stat::statistic_node n;
  ASSERT_TRUE(passes(check(one, second, n)));
  n.add_pass(second, 1);
  EXPECT_FALSE(passes(check(one, second + 500, n)));
  EXPECT_TRUE(passes(check(one, second + 1000, n)));
  // A count under one entry a second blocks every entry, as a reject rule's does.
  warm_up_controller half{0.5, 1};
  stat::statistic_node m;
  EXPECT_FALSE(passes(check(half, second, m)));
  EXPECT_FALSE(passes(check(half, second + 5000, m)));
}

/// The times (ms from the start) at which a flood checked every 10 ms from cold passes.
std::vector<std::int64_t> flood_pass_times(warm_up_controller& c, std::int64_t duration_ms) {
  stat::statistic_node n;
  std::vector<std::int64_t> times;
  for (std::int64_t ms = 0; ms < duration_ms; ms += 10) {
    const std::int64_t now = second + ms;
    const slot_verdict v = check(c, now, n);
    if (passes(v)) {
      n.add_pass(now, 1);
      times.push_back(ms);
    } else {
      EXPECT_GE(v.block.retry_after.count(), 1) << ms;
    }
  }
  return times;
}

// An audit: count 2 with a 2 s warm-up started at 0.67 QPS, which a one-second window never
// holds (0 + 1 > 0.67), so nothing passed, no token drained, and the rule never warmed up.
TEST(WarmUpController, AColdLimitUnderOneASecondSpacesPassesAndWarmsUpToCount) {
  warm_up_controller c{2, 2};
  ASSERT_NEAR(c.allowed_qps(c.max_token()), 2.0 / 3, 1e-9);
  // Tokens 4 (0.67 QPS): a pass at once; the next second 3 (1 QPS); then 2, the warning token:
  // `count` a second.
  EXPECT_EQ(flood_pass_times(c, 5000),
            (std::vector<std::int64_t>{0, 1000, 2000, 2010, 3000, 3010, 4000, 4010}));
}

// Count 1 over 10 s: warning token 5, max token 10, slope 0.4. Each pass is spaced by 1 / limit
// at the tokens of its second: 10 → 1/3 QPS (the first pass), 9 → 2.6 s, 8 → 2.2 s, 7 → 1.8 s,
// 6 → 1.4 s; a second with a pass drains one token the next; at 5 the limit is `count`.
TEST(WarmUpController, ColdPassesAreSpacedByTheLimitAsTheBucketDrains) {
  warm_up_controller c{1, 10};
  ASSERT_EQ(c.warning_token(), 5);
  ASSERT_EQ(c.max_token(), 10);
  EXPECT_EQ(flood_pass_times(c, 12000),
            (std::vector<std::int64_t>{0, 2600, 4800, 6600, 8000, 9000, 10000, 11000}));
}

// A review: spaced passes ignored the window, so with the limit between 1 and 2 an entry of
// acquire 1 passed by the limit and one of acquire 2 was spaced in after it: 3 in a window
// against count 2.
TEST(WarmUpController, ASpacedPassGoesOnlyIntoAnEmptyWindow) {
  warm_up_controller c{2, 10};
  stat::statistic_node n;
  std::int64_t most = 0;
  for (std::int64_t ms = 0; ms < 20'000; ms += 10) {
    const std::int64_t now = second + ms;
    const std::uint32_t acquire = (ms / 10) % 2 == 0 ? 1 : 2;
    flow_booking booking;
    if (passes(c.check(at(now, acquire), n, booking))) n.add_pass(now, acquire);
    most = std::max<std::int64_t>(most, static_cast<std::int64_t>(n.pass_qps(now)));
  }
  EXPECT_LE(most, 2);
}

TEST(WarmUpController, ASpacedColdPassGivenBackLetsTheNextEntryPass) {
  warm_up_controller c{2, 2};
  stat::statistic_node n;
  flow_booking first;
  ASSERT_TRUE(passes(c.check(at(second), n, first)));
  ASSERT_TRUE(first.queued);
  flow_booking second_try;
  EXPECT_FALSE(passes(c.check(at(second + 10), n, second_try)));
  c.unqueue(first.queue_from_ns, first.queue_to_ns);  // a later rule blocked the first entry
  flow_booking third;
  EXPECT_TRUE(passes(c.check(at(second + 20), n, third)));
}

// The reference curve: Sentinel's token arithmetic, second by second, from the passes admitted.
struct reference_bucket {
  double count;
  std::int64_t warning, max;
  double slope;
  std::int64_t tokens = -1;

  void sync(std::int64_t previous) {
    std::int64_t t = tokens < 0 ? 0 : tokens;
    const bool refill = tokens < 0 || t < warning ||
                        (t > warning && previous < static_cast<std::int64_t>(count) / 3);
    if (refill)
      t = tokens < 0 ? max : std::min<std::int64_t>(t + static_cast<std::int64_t>(count), max);
    tokens = std::max<std::int64_t>(t - previous, 0);
  }
  double limit() const {
    return tokens < warning ? count
                            : 1.0 / (static_cast<double>(tokens - warning) * slope + 1.0 / count);
  }
};

TEST(WarmUpController, FloodFromColdFollowsTheCurveAndReachesCountAfterTheWarmUpPeriod) {
  const double count = 100;
  const int period = 10;
  warm_up_controller c{count, period};
  reference_bucket ref{count, c.warning_token(), c.max_token(), c.slope()};
  stat::statistic_node n;
  std::int64_t previous = 0;
  for (int s = 0; s < 16; ++s) {
    ref.sync(previous);
    const double expected = ref.limit();
    std::int64_t admitted = 0;
    for (int ms = 0; ms < 1000; ++ms) {
      const std::int64_t now = second + s * 1000 + ms;
      if (passes(check(c, now, n))) {
        n.add_pass(now, 1);
        ++admitted;
      }
    }
    EXPECT_NEAR(static_cast<double>(admitted), expected, expected * 0.10) << "second " << s;
    if (s == 0) {
      EXPECT_NEAR(static_cast<double>(admitted), count / 3, count / 30);
    }
    if (s > period) {
      EXPECT_EQ(admitted, static_cast<std::int64_t>(count)) << "second " << s;
    } else {
      EXPECT_LT(admitted, static_cast<std::int64_t>(count)) << "second " << s;
    }
    previous = admitted;
  }
}

}  // namespace
}  // namespace floodgate::flow
