// The adaptive breaker (Google SRE client-side throttling) on a manual time line with seeded
// random draws: the drop ratio is the formula, decisions draw against it, a half-healthy
// dependency gets about k times what it accepts, and recovery follows the window.
#include "degrade/adaptive_breaker.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace floodgate {
namespace {

using detail::adaptive_breaker;
using detail::adaptive_window;
using detail::drop_random;

constexpr std::uint64_t seed = 0x5eed;
constexpr std::int64_t t0 = 1'000'000;  // on a bucket boundary of every window used here

degrade_rule adaptive_rule(double k, std::int32_t min_requests = 5,
                           std::int32_t interval_ms = 10'000) {
  degrade_rule r;
  r.resource = "backend";
  r.grade = degrade_grade::adaptive;
  r.k = k;
  r.min_request_amount = min_requests;
  r.stat_interval_ms = interval_ms;
  return r;
}

double formula(double requests, double accepts, double k) {
  return std::max(0.0, (requests - k * accepts) / (requests + 1));
}

/// Records `requests` completions at `now`, the first `accepts` of them good.
void complete(adaptive_breaker& b, std::int64_t now, int requests, int accepts) {
  for (int i = 0; i < requests; ++i) {
    b.on_request_complete(now, /*error=*/i >= accepts);
  }
}

adaptive_window_state state_at(const adaptive_breaker& b, std::int64_t now) {
  return *b.adaptive(now);
}

/// The draw a request makes, as a number in [0, 1): 40 random bits over 2^40.
double uniform(drop_random& r) { return std::ldexp(static_cast<double>(r.next() >> 24), -40); }

TEST(AdaptiveWindow, SplitsTheIntervalIntoAtMostFortyEqualBuckets) {
  EXPECT_EQ(adaptive_window::bucket_count_for(10'000), 40);  // go-zero: 40 x 250 ms
  EXPECT_EQ(adaptive_window::bucket_count_for(1'000), 40);
  EXPECT_EQ(adaptive_window::bucket_count_for(100), 25);
  EXPECT_EQ(adaptive_window::bucket_count_for(30), 30);   // 1 ms buckets
  EXPECT_EQ(adaptive_window::bucket_count_for(997), 1);   // a prime: one tumbling bucket
  const adaptive_window w(10'000);
  EXPECT_EQ(w.bucket_ms(), 250);
}

TEST(AdaptiveWindow, ForgetsABucketOnceItLeavesTheInterval) {
  adaptive_window w(1'000);  // 40 x 25 ms
  w.record(t0, true);
  w.record(t0 + 500, false);
  EXPECT_EQ(w.read(t0 + 999).requests, 2u);
  EXPECT_EQ(w.read(t0 + 999).accepts, 1u);
  EXPECT_EQ(w.read(t0 + 1'000).requests, 1u);  // t0's bucket is out, t0 + 500's is in
  EXPECT_EQ(w.read(t0 + 1'000).accepts, 0u);
  EXPECT_EQ(w.read(t0 + 1'525).requests, 0u);
}

struct formula_case {
  int requests;
  int accepts;
  double k;
};

class AdaptiveBreakerFormula : public testing::TestWithParam<formula_case> {};

TEST_P(AdaptiveBreakerFormula, DropRatioAfterNRequestsAndMAcceptsIsTheSreFormula) {
  const formula_case c = GetParam();
  adaptive_breaker b(adaptive_rule(c.k), seed);
  complete(b, t0, c.requests, c.accepts);
  const adaptive_window_state s = state_at(b, t0 + 1);
  EXPECT_EQ(s.requests, static_cast<std::uint64_t>(c.requests));
  EXPECT_EQ(s.accepts, static_cast<std::uint64_t>(c.accepts));
  EXPECT_DOUBLE_EQ(s.drop_ratio, formula(c.requests, c.accepts, c.k));
}

INSTANTIATE_TEST_SUITE_P(
    GoogleSre, AdaptiveBreakerFormula,
    testing::Values(formula_case{100, 40, 2.0},    // (100 - 80) / 101
                    formula_case{100, 50, 2.0},    // k * accepts = requests: no drop
                    formula_case{100, 90, 2.0},    // negative: clamped to 0
                    formula_case{1000, 100, 1.5},  // (1000 - 150) / 1001
                    formula_case{10, 0, 1.5},      // all failures: 10 / 11
                    formula_case{5, 0, 3.0},       // exactly minRequestAmount
                    formula_case{400, 100, 1.01}));

TEST(AdaptiveBreaker, EveryDecisionDrawsAgainstTheRatioOfItsBucket) {
  adaptive_breaker b(adaptive_rule(2.0), seed);
  complete(b, t0, 100, 20);  // ratio (100 - 40) / 101
  drop_random expected(seed);  // the same stream on the same thread

  // The ratio is published by the first request of a bucket and holds for the whole bucket,
  // although this bucket's drops add requests to the window.
  const std::int64_t t1 = t0 + 250;
  const double p1 = formula(100, 20, 2.0);
  int drops = 0;
  for (int i = 0; i < 400; ++i) {
    const bool drop = uniform(expected) < p1;
    ASSERT_EQ(b.try_pass(t1), !drop) << "request " << i;
    drops += drop ? 1 : 0;
  }
  EXPECT_NEAR(drops / 400.0, p1, 0.08);

  // The next bucket decides on the window as it is then: the drops count as requests.
  const std::int64_t t2 = t1 + 250;
  const adaptive_window_state s = state_at(b, t2);
  EXPECT_EQ(s.requests, 100u + static_cast<std::uint64_t>(drops));
  EXPECT_EQ(s.accepts, 20u);
  const double p2 = formula(static_cast<double>(s.requests), 20, 2.0);
  EXPECT_DOUBLE_EQ(s.drop_ratio, p2);
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(b.try_pass(t2), !(uniform(expected) < p2)) << "request " << i;
  }
}

TEST(AdaptiveBreaker, AnEmptyWindowDropsNothing) {
  adaptive_breaker b(adaptive_rule(1.5), seed);
  const adaptive_window_state s = state_at(b, t0);
  EXPECT_EQ(s.requests, 0u);
  EXPECT_EQ(s.accepts, 0u);
  EXPECT_EQ(s.drop_ratio, 0.0);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(b.try_pass(t0 + i));
  }
}

TEST(AdaptiveBreaker, BelowMinRequestAmountNothingIsDroppedEvenIfAllFailed) {
  adaptive_breaker b(adaptive_rule(2.0, /*min_requests=*/20), seed);
  complete(b, t0, 19, 0);
  EXPECT_EQ(state_at(b, t0 + 250).drop_ratio, 0.0);
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(b.try_pass(t0 + 250));  // the bucket's ratio: 19 < 20 requests
  }
  adaptive_breaker at_min(adaptive_rule(2.0, 20), seed);
  complete(at_min, t0, 20, 0);
  EXPECT_DOUBLE_EQ(state_at(at_min, t0 + 250).drop_ratio, 20.0 / 21.0);
}

TEST(AdaptiveBreaker, AllFailuresDropAllButAboutOneRequestPerWindow) {
  adaptive_breaker b(adaptive_rule(1.5), seed);
  // 400 requests a second for a minute, every one that passes fails.
  std::int64_t passed_after_first_window = 0;
  for (std::int64_t t = t0; t < t0 + 60'000; t += 10) {
    for (int i = 0; i < 4; ++i) {
      if (b.try_pass(t)) {
        b.on_request_complete(t, /*error=*/true);
        passed_after_first_window += t >= t0 + 10'000 ? 1 : 0;
      }
    }
  }
  const adaptive_window_state s = state_at(b, t0 + 60'000 - 1);
  EXPECT_EQ(s.accepts, 0u);
  EXPECT_DOUBLE_EQ(s.drop_ratio, formula(static_cast<double>(s.requests), 0, 1.5));
  EXPECT_GT(s.drop_ratio, 0.999);
  // Still probed (the SRE breaker never closes the door), but only a trickle: with
  // ratio R / (R + 1), about one request of each window's 4000.
  EXPECT_GE(passed_after_first_window, 1);
  EXPECT_LE(passed_after_first_window, 30);
}

/// A dependency that can serve `capacity` requests per tick: the first `capacity` requests let
/// through in a tick succeed, the rest fail (an overloaded backend answering 503).
struct tick_result {
  int offered = 0;
  int passed = 0;
  int succeeded = 0;
};

tick_result tick(adaptive_breaker& b, std::int64_t t, int offered, int capacity) {
  tick_result r;
  r.offered = offered;
  for (int i = 0; i < offered; ++i) {
    if (b.try_pass(t)) {
      const bool ok = r.passed < capacity;
      ++r.passed;
      r.succeeded += ok ? 1 : 0;
      b.on_request_complete(t, !ok);
    }
  }
  return r;
}

TEST(AdaptiveBreaker, ADependencyServingHalfTheLoadGetsAboutKTimesWhatItAccepts) {
  constexpr double k = 1.5;
  adaptive_breaker b(adaptive_rule(k), seed);
  // 400 requests a second in ticks of 50 ms; the dependency serves 10 of every tick's 20: at
  // full admission half of the requests fail.
  std::int64_t t = t0;
  for (; t < t0 + 60'000; t += 50) {
    tick(b, t, 20, 10);
  }
  // Over a window the breaker lets through about k times the successes (the SRE book's fixed
  // point: requests - k * accepts = ratio * (requests + 1)), and every slice of it a steady 75 %
  // of the load: not everything, not nothing.
  tick_result window;
  for (int slice = 0; slice < 5; ++slice) {
    tick_result sum;
    for (const std::int64_t end = t + 2'000; t < end; t += 50) {
      const tick_result r = tick(b, t, 20, 10);
      sum.offered += r.offered;
      sum.passed += r.passed;
      sum.succeeded += r.succeeded;
    }
    EXPECT_NEAR(static_cast<double>(sum.passed) / sum.offered, k * 10 / 20, 0.05)
        << "slice " << slice;
    window.passed += sum.passed;
    window.succeeded += sum.succeeded;
  }
  EXPECT_NEAR(static_cast<double>(window.passed) / window.succeeded, k, 0.05);
}

TEST(AdaptiveBreaker, AfterTheDependencyHealsEverythingPassesWithinTheWindow) {
  constexpr double k = 1.5;
  adaptive_breaker b(adaptive_rule(k), seed);
  std::int64_t t = t0;
  for (; t < t0 + 60'000; t += 50) {
    tick(b, t, 20, 10);
  }
  const std::int64_t healed = t;
  const double before = state_at(b, healed).drop_ratio;
  EXPECT_NEAR(before, 0.25, 0.03);
  // Healed: every request that passes succeeds. The ratio falls as good requests fill the
  // window and the failures leave it.
  double previous = before;
  for (; t < healed + 10'000; t += 50) {
    tick(b, t, 20, 20);
    if ((t - healed) % 1'000 == 0) {
      const double now = state_at(b, t).drop_ratio;
      EXPECT_LE(now, previous + 1e-9) << "at +" << (t - healed) << " ms";
      previous = now;
    }
  }
  EXPECT_EQ(state_at(b, t).drop_ratio, 0.0);
  for (int i = 0; i < 2'000; ++i) {
    ASSERT_TRUE(b.try_pass(t + i / 100)) << "request " << i;
  }
}

TEST(AdaptiveBreaker, PerRequestFailuresBelowOneInKAreNeverShed) {
  // Every request fails with probability 30 %: k * accepts = 1.4 requests, above requests.
  adaptive_breaker b(adaptive_rule(2.0), seed);
  int dropped = 0;
  for (std::int64_t t = t0; t < t0 + 30'000; t += 10) {
    for (int i = 0; i < 10; ++i) {
      if (b.try_pass(t)) {
        b.on_request_complete(t, /*error=*/i < 3);
      } else {
        ++dropped;
      }
    }
  }
  EXPECT_EQ(dropped, 0);
}

TEST(AdaptiveBreaker, IsAlwaysInStateAdaptiveAndNeverTransitions) {
  adaptive_breaker b(adaptive_rule(2.0), seed);
  complete(b, t0, 100, 0);
  EXPECT_EQ(b.state(), breaker_state::adaptive);
  EXPECT_EQ(to_string(b.state()), "adaptive");
  EXPECT_EQ(b.transitions(breaker_state::closed, breaker_state::open), 0u);
}

}  // namespace
}  // namespace floodgate
