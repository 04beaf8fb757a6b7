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
  EXPECT_FALSE(passes(c.check(at(t), busy.node)));
  EXPECT_EQ(c.stored_tokens(), 99);
  EXPECT_NEAR(c.allowed_qps(99), 3.378, 1e-3);
  // passQps 1, previous 1: passes.
  node_state quiet{t, 1, 1};
  EXPECT_TRUE(passes(c.check(at(t), quiet.node)));

  // 10 QPS for 10 s, checked every 100 ms: 99 → 89 → … → 49, then refill = drain at 49.
  stat::statistic_node steady;
  for (std::int64_t ms = second - 1000; ms < t; ms += 100) steady.add_pass(ms, 1);
  std::vector<std::int64_t> per_second;
  for (std::int64_t ms = t; ms < t + 10'000; ms += 100) {
    steady.add_pass(ms, 1);
    c.check(at(ms), steady);
    if ((ms - t) % 1000 == 900) per_second.push_back(c.stored_tokens());
  }
  EXPECT_EQ(per_second, (std::vector<std::int64_t>{89, 79, 69, 59, 49, 49, 49, 49, 49, 49}));

  // Below the warning token the limit is count: passQps 8 passes, 10 is blocked.
  const std::int64_t later = t + 10'000;
  node_state eight{later, 10, 8};
  EXPECT_TRUE(passes(c.check(at(later), eight.node)));
  node_state ten{later, 10, 10};
  const auto v = c.check(at(later), ten.node);
  ASSERT_FALSE(passes(v));
  EXPECT_EQ(v.block.reason, block_reason::flow);
  EXPECT_GE(v.block.retry_after.count(), 1);
}

TEST(WarmUpController, WithoutRoomToWarmUpEveryEntryIsBlocked) {
  // period * count < 2: warning token = max token = 0, as in Sentinel (a NaN limit).
  warm_up_controller c{0.5, 1};
  stat::statistic_node n;
  EXPECT_FALSE(passes(c.check(at(second), n)));
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
      if (passes(c.check(at(now), n))) {
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
