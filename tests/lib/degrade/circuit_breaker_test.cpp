// The circuit breaker alone, driven with a manual clock: Sentinel's ExceptionCircuitBreakerTest
// and ResponseTimeCircuitBreakerTest, the state machine's edges, and the single-probe race.
#include "degrade/circuit_breaker_impl.hpp"
#include "lib/degrade/degrade_test_support.hpp"
#include "lib/support/cpu_pin.hpp"

#include <floodgate/chain/clock.hpp>

#include <gtest/gtest.h>

#include <pthread.h>
#include <sched.h>

#include <array>
#include <atomic>
#include <barrier>
#include <thread>
#include <vector>

namespace floodgate {
namespace {

using admission = detail::circuit_breaker_impl::admission;
using enum breaker_state;

constexpr std::int64_t start_ms = test_support::degrade_start_ms;

degrade_rule rule_of(degrade_grade grade, double count, std::int32_t min_request,
                     std::int32_t stat_interval_ms, std::int32_t time_window_sec,
                     double slow_ratio = 1.0) {
  return test_support::degrade_rule_of("res", grade, count, min_request, stat_interval_ms,
                                       time_window_sec, slow_ratio);
}

/// A breaker plus Sentinel's AbstractTimeBasedTest helpers.
struct breaker_harness {
  explicit breaker_harness(degrade_rule r) : breaker(std::move(r), observers) {}

  /// Enters, takes `rt_ms`, exits; false when blocked.
  bool call(std::int64_t rt_ms, bool error = false) {
    if (breaker.try_pass(clock.now_ms()).outcome == admission::kind::block) {
      return false;
    }
    clock.advance_ms(rt_ms);
    breaker.on_request_complete(clock.now_ms(), rt_ms, error);
    return true;
  }
  bool ok() { return call(5); }
  bool error() { return call(5, true); }

  manual_clock clock{start_ms};
  breaker_observers observers;
  detail::circuit_breaker_impl breaker;
};

// Sentinel's ExceptionCircuitBreakerTest: ratio 0.2, 20 s interval, 10 s window, min 1.
TEST(ExceptionCircuitBreaker, OpensOnTheErrorThatCrossesTheRatioAndRecoversThroughOneProbe) {
  breaker_harness h{rule_of(degrade_grade::error_ratio, 0.2, 1, 20'000, 10)};
  EXPECT_TRUE(h.ok());
  EXPECT_TRUE(h.error());  // 1/2 = 0.5 > 0.2
  EXPECT_EQ(h.breaker.state(), open);
  EXPECT_FALSE(h.ok());
  EXPECT_FALSE(h.ok());
  h.clock.advance_ms(5'000);
  EXPECT_FALSE(h.ok());
  h.clock.advance_ms(5'000);
  EXPECT_TRUE(h.error());  // the probe fails: open for another 10 s
  EXPECT_EQ(h.breaker.state(), open);
  EXPECT_FALSE(h.ok());
  EXPECT_FALSE(h.ok());
  h.clock.advance_ms(10'000);
  EXPECT_TRUE(h.ok());  // the probe succeeds: closed, window emptied
  EXPECT_EQ(h.breaker.state(), closed);
  for (int i = 0; i < 6; ++i) {
    EXPECT_TRUE(h.ok());
  }
  EXPECT_TRUE(h.error());  // 1/7 < 0.2
  EXPECT_TRUE(h.ok());
  EXPECT_EQ(h.breaker.state(), closed);
  EXPECT_EQ(h.breaker.transitions(closed, open), 1u);
  EXPECT_EQ(h.breaker.transitions(open, half_open), 2u);
  EXPECT_EQ(h.breaker.transitions(half_open, open), 1u);
  EXPECT_EQ(h.breaker.transitions(half_open, closed), 1u);
}

// Sentinel's ResponseTimeCircuitBreakerTest: 10 ms, min 3, ratio 1.0, 5 s interval, 5 s window.
TEST(ResponseTimeCircuitBreaker, AllSlowAtThresholdOneOpensAndProbesAfterTheTimeWindow) {
  breaker_harness h{rule_of(degrade_grade::slow_request_ratio, 10, 3, 5'000, 5)};
  EXPECT_TRUE(h.call(20));
  EXPECT_TRUE(h.call(20));
  EXPECT_TRUE(h.call(20));  // 3/3 = 1.0 == threshold 1.0 opens
  EXPECT_FALSE(h.call(20));
  h.clock.advance_ms(1'000);
  EXPECT_FALSE(h.call(20));
  h.clock.advance_ms(4'000);
  EXPECT_TRUE(h.call(20));  // the probe
}

TEST(ResponseTimeCircuitBreaker, ARequestAsSlowAsTheCountIsNotSlow) {
  breaker_harness h{rule_of(degrade_grade::slow_request_ratio, 10, 1, 5'000, 5)};
  for (int i = 0; i < 20; ++i) {
    EXPECT_TRUE(h.call(10));
  }
  EXPECT_EQ(h.breaker.state(), closed);
  EXPECT_TRUE(h.call(11));  // 1/21 slow
  EXPECT_EQ(h.breaker.state(), closed);
}

TEST(ResponseTimeCircuitBreaker, ARatioEqualToAThresholdBelowOneDoesNotOpen) {
  breaker_harness h{rule_of(degrade_grade::slow_request_ratio, 10, 4, 5'000, 5, 0.5)};
  EXPECT_TRUE(h.call(50));
  EXPECT_TRUE(h.call(1));
  EXPECT_TRUE(h.call(50));
  EXPECT_TRUE(h.call(1));  // 2/4 = 0.5, not > 0.5
  EXPECT_EQ(h.breaker.state(), closed);
  EXPECT_TRUE(h.call(50));  // 3/5 = 0.6
  EXPECT_EQ(h.breaker.state(), open);
}

TEST(ResponseTimeCircuitBreaker, NeverOpensBelowMinRequestAmount) {
  breaker_harness h{rule_of(degrade_grade::slow_request_ratio, 10, 5, 5'000, 5)};
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(h.call(100));
  }
  EXPECT_EQ(h.breaker.state(), closed);
  EXPECT_TRUE(h.call(100));  // the 5th request may trip
  EXPECT_EQ(h.breaker.state(), open);
}

TEST(ErrorCountCircuitBreaker, OpensWhenErrorsExceedTheCount) {
  breaker_harness h{rule_of(degrade_grade::error_count, 2, 1, 1'000, 1)};
  EXPECT_TRUE(h.error());
  EXPECT_TRUE(h.error());  // 2, not > 2
  EXPECT_EQ(h.breaker.state(), closed);
  EXPECT_TRUE(h.ok());  // successes do not count
  EXPECT_EQ(h.breaker.state(), closed);
  EXPECT_TRUE(h.error());
  EXPECT_EQ(h.breaker.state(), open);
}

TEST(ErrorCountCircuitBreaker, AGoodRequestReachingMinRequestAmountCanOpen) {
  breaker_harness h{rule_of(degrade_grade::error_count, 2, 4, 1'000, 1)};
  EXPECT_TRUE(h.error());
  EXPECT_TRUE(h.error());
  EXPECT_TRUE(h.error());
  EXPECT_EQ(h.breaker.state(), closed);  // 3 requests < 4
  EXPECT_TRUE(h.ok());                   // 4 requests, 3 errors > 2
  EXPECT_EQ(h.breaker.state(), open);
}

TEST(CircuitBreakerWindow, CountsFromEveryThreadAddUp) {
  // Completions on other threads land in their own shards; the crossing one sees the sum.
  breaker_harness h{rule_of(degrade_grade::error_count, 4, 6, 1'000, 1)};
  const auto complete = [&](int n, bool error) {
    for (int i = 0; i < n; ++i) {
      h.breaker.on_request_complete(h.clock.now_ms(), 5, error);
    }
  };
  complete(1, true);  // this thread takes its shard first, so the others take different ones
  std::thread([&] { complete(3, true); }).join();
  std::thread([&] { complete(1, true); }).join();
  EXPECT_EQ(h.breaker.state(), closed);  // 5 errors of 5 requests: below min 6
  complete(1, false);                    // 6 requests, 5 errors > 4: opens on a good request
  EXPECT_EQ(h.breaker.state(), open);
}

TEST(CircuitBreakerWindow, AClosingProbeStartsAFreshWindowForEveryThread) {
  breaker_harness h{rule_of(degrade_grade::error_count, 2, 1, 60'000, 1)};
  EXPECT_TRUE(h.ok());  // this thread takes its shard first
  std::thread([&] {
    for (int i = 0; i < 3; ++i) h.breaker.on_request_complete(h.clock.now_ms(), 5, true);
  }).join();
  EXPECT_EQ(h.breaker.state(), open);
  h.clock.advance_ms(1'000);
  EXPECT_TRUE(h.ok());  // the probe closes the breaker, same 60 s window
  EXPECT_EQ(h.breaker.state(), closed);
  // The other thread's 3 errors are gone: two more errors are not over 2.
  EXPECT_TRUE(h.error());
  EXPECT_TRUE(h.error());
  EXPECT_EQ(h.breaker.state(), closed);
  EXPECT_TRUE(h.error());
  EXPECT_EQ(h.breaker.state(), open);
}

TEST(CircuitBreakerWindow, IsATumblingWindowAlignedToTheInterval) {
  breaker_harness h{rule_of(degrade_grade::error_count, 2, 1, 1'000, 1)};
  h.clock.set_ms(start_ms + 980);
  EXPECT_TRUE(h.error());
  EXPECT_TRUE(h.error());  // ends at start + 990, still the first window
  h.clock.set_ms(start_ms + 1'000);
  EXPECT_TRUE(h.error());  // a new window: 1 error, not 3
  EXPECT_TRUE(h.error());
  EXPECT_EQ(h.breaker.state(), closed);
  EXPECT_TRUE(h.error());
  EXPECT_EQ(h.breaker.state(), open);
}

TEST(CircuitBreakerState, OpenBlocksUntilExactlyTheTimeWindowHasPassed) {
  breaker_harness h{rule_of(degrade_grade::error_count, 0, 1, 1'000, 3)};
  EXPECT_TRUE(h.error());
  const std::int64_t opened_at = h.clock.now_ms();
  EXPECT_EQ(h.breaker.next_retry_ms(), opened_at + 3'000);
  h.clock.set_ms(opened_at + 2'999);
  const admission a = h.breaker.try_pass(h.clock.now_ms());
  EXPECT_EQ(a.outcome, admission::kind::block);
  EXPECT_EQ(a.retry_after_ms, 1);
  h.clock.set_ms(opened_at + 3'000);
  EXPECT_EQ(h.breaker.try_pass(h.clock.now_ms()).outcome, admission::kind::probe);
}

TEST(CircuitBreakerState, RetryAfterIsTheTimeUntilTheProbeThenOneSecondWhileItRuns) {
  breaker_harness h{rule_of(degrade_grade::error_count, 0, 1, 1'000, 10)};
  EXPECT_TRUE(h.error());
  h.clock.advance_ms(2'500);
  EXPECT_EQ(h.breaker.try_pass(h.clock.now_ms()).retry_after_ms, 7'500);
  h.clock.advance_ms(7'500);
  ASSERT_EQ(h.breaker.try_pass(h.clock.now_ms()).outcome, admission::kind::probe);
  const admission during_probe = h.breaker.try_pass(h.clock.now_ms());
  EXPECT_EQ(during_probe.outcome, admission::kind::block);
  EXPECT_EQ(during_probe.retry_after_ms, 1'000);
}

TEST(CircuitBreakerState, HalfOpenAdmitsOnlyTheProbe) {
  breaker_harness h{rule_of(degrade_grade::error_count, 0, 1, 1'000, 1)};
  EXPECT_TRUE(h.error());
  h.clock.advance_ms(1'000);
  EXPECT_EQ(h.breaker.try_pass(h.clock.now_ms()).outcome, admission::kind::probe);
  EXPECT_EQ(h.breaker.state(), half_open);
  h.clock.advance_ms(60'000);  // however long the probe takes
  EXPECT_EQ(h.breaker.try_pass(h.clock.now_ms()).outcome, admission::kind::block);
  EXPECT_EQ(h.breaker.state(), half_open);
}

TEST(CircuitBreakerState, AnyRequestCompletingWhileHalfOpenDecides) {
  breaker_harness h{rule_of(degrade_grade::slow_request_ratio, 100, 1, 60'000, 1)};
  // A long request entered while CLOSED...
  ASSERT_EQ(h.breaker.try_pass(h.clock.now_ms()).outcome, admission::kind::pass);
  EXPECT_TRUE(h.call(500));  // ...then another opens the breaker.
  h.clock.advance_ms(1'000);
  ASSERT_EQ(h.breaker.try_pass(h.clock.now_ms()).outcome, admission::kind::probe);
  // The long request completes fast enough before the probe does: it closes the breaker.
  h.breaker.on_request_complete(h.clock.now_ms(), 50, false);
  EXPECT_EQ(h.breaker.state(), closed);
}

TEST(CircuitBreakerState, AGoodProbeEmptiesTheWindow) {
  breaker_harness h{rule_of(degrade_grade::error_count, 1, 1, 60'000, 1)};
  EXPECT_TRUE(h.error());
  EXPECT_TRUE(h.error());  // 2 > 1
  h.clock.advance_ms(1'000);
  EXPECT_TRUE(h.ok());  // closes
  EXPECT_TRUE(h.error());  // 1 error in the emptied window, not 3
  EXPECT_EQ(h.breaker.state(), closed);
}

TEST(CircuitBreakerState, ABadProbeReopensForAFullTimeWindowFromItsCompletion) {
  breaker_harness h{rule_of(degrade_grade::slow_request_ratio, 10, 1, 60'000, 2)};
  EXPECT_TRUE(h.call(50));
  h.clock.advance_ms(2'000);
  EXPECT_TRUE(h.call(300));
  EXPECT_EQ(h.breaker.state(), open);
  EXPECT_EQ(h.breaker.next_retry_ms(), h.clock.now_ms() + 2'000);
}

TEST(CircuitBreakerState, ARevertedProbeKeepsTheProbeTimeSoTheNextRequestProbes) {
  breaker_harness h{rule_of(degrade_grade::error_count, 0, 1, 1'000, 5)};
  EXPECT_TRUE(h.error());
  const std::int64_t retry_at = h.breaker.next_retry_ms();
  h.clock.set_ms(retry_at + 10);
  ASSERT_EQ(h.breaker.try_pass(h.clock.now_ms()).outcome, admission::kind::probe);
  h.breaker.revert_probe();
  EXPECT_EQ(h.breaker.state(), open);
  EXPECT_EQ(h.breaker.next_retry_ms(), retry_at);
  EXPECT_EQ(h.breaker.try_pass(h.clock.now_ms()).outcome, admission::kind::probe);
}

TEST(CircuitBreakerState, RequestsCompletingWhileOpenChangeNothing) {
  breaker_harness h{rule_of(degrade_grade::error_count, 0, 1, 60'000, 5)};
  ASSERT_EQ(h.breaker.try_pass(h.clock.now_ms()).outcome, admission::kind::pass);
  EXPECT_TRUE(h.error());
  const std::int64_t retry_at = h.breaker.next_retry_ms();
  h.breaker.on_request_complete(h.clock.now_ms(), 1, false);  // the one entered before
  EXPECT_EQ(h.breaker.state(), open);
  EXPECT_EQ(h.breaker.next_retry_ms(), retry_at);
}

TEST(CircuitBreakerObservers, SeeEveryTransitionWithItsValue) {
  struct seen {
    breaker_state from, to;
    std::optional<double> value;
    bool operator==(const seen&) const = default;
  };
  breaker_harness h{rule_of(degrade_grade::error_ratio, 0.5, 2, 60'000, 1)};
  std::vector<seen> log;
  h.observers.add([&](breaker_state from, breaker_state to, const degrade_rule& r,
                      std::optional<double> value) {
    EXPECT_EQ(&r, &h.breaker.rule());
    log.push_back({from, to, value});
  });
  EXPECT_TRUE(h.error());
  EXPECT_TRUE(h.error());  // 2/2
  h.clock.advance_ms(1'000);
  EXPECT_TRUE(h.error());
  h.clock.advance_ms(1'000);
  EXPECT_TRUE(h.ok());
  EXPECT_EQ(log, (std::vector<seen>{{closed, open, 1.0},
                                    {open, half_open, std::nullopt},
                                    {half_open, open, 1.0},
                                    {open, half_open, std::nullopt},
                                    {half_open, closed, std::nullopt}}));
}

TEST(CircuitBreakerConcurrency, ThreadsRacingAnElapsedOpenBreakerAdmitExactlyOneProbe) {
  constexpr int threads = 8;
  constexpr int rounds = 200;
  breaker_harness h{rule_of(degrade_grade::error_count, 0, 1, 1'000, 1)};
  for (int round = 0; round < rounds; ++round) {
    ASSERT_TRUE(h.error());  // CLOSED -> OPEN
    ASSERT_EQ(h.breaker.state(), open);
    h.clock.advance_ms(1'000);
    std::atomic<int> probes{0};
    std::atomic<int> passes{0};
    std::barrier start(threads);
    std::vector<std::jthread> racers;
    for (int t = 0; t < threads; ++t) {
      racers.emplace_back([&] {
        start.arrive_and_wait();
        const auto a = h.breaker.try_pass(h.clock.now_ms());
        if (a.outcome == admission::kind::probe) probes.fetch_add(1);
        if (a.outcome == admission::kind::pass) passes.fetch_add(1);
      });
    }
    racers.clear();
    ASSERT_EQ(probes.load(), 1) << "round " << round;
    ASSERT_EQ(passes.load(), 0);
    h.breaker.revert_probe();  // then a bad probe, and a good one to close for the next round
    h.clock.advance_ms(1);
    ASSERT_EQ(h.breaker.try_pass(h.clock.now_ms()).outcome, admission::kind::probe);
    h.clock.advance_ms(5);
    h.breaker.on_request_complete(h.clock.now_ms(), 5, true);
    ASSERT_EQ(h.breaker.state(), open);
    h.clock.advance_ms(1'000);
    ASSERT_EQ(h.breaker.try_pass(h.clock.now_ms()).outcome, admission::kind::probe);
    h.breaker.on_request_complete(h.clock.now_ms(), 5, false);
    ASSERT_EQ(h.breaker.state(), closed);
  }
}

/// A barrier for two threads that spin (yielding now and then, should they share a CPU): both
/// leave it within about a cache-line transfer of each other.
class spin_barrier {
 public:
  void arrive_and_wait() {
    const int phase = phase_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) == 1) {
      arrived_.store(0, std::memory_order_relaxed);
      phase_.store(phase + 1, std::memory_order_release);
      return;
    }
    for (int spins = 0; phase_.load(std::memory_order_acquire) == phase; ++spins) {
      if (spins % 4096 == 4095) std::this_thread::yield();
    }
  }

 private:
  std::atomic<int> arrived_{0};
  std::atomic<int> phase_{0};
};

// Two requests completing at the same moment on two CPUs each count in their CPU's shard, then
// read the other's: without a full fence between the two, x86 lets each read miss the other's
// store (still in its store buffer), both see one request against minRequestAmount 2, and the
// breaker stays closed with two errors in its window. Sentinel's locked LongAdder adds cannot
// both miss. Rounds on two pinned threads; a varying short delay after the barrier makes some
// of the completions coincide.
TEST(CircuitBreakerConcurrency, TwoCompletionsAtOnceOnTwoCpusOpenTheBreaker) {
  const auto two = test::two_allowed_cpus();
  if (!two) GTEST_SKIP() << "needs two CPUs to run the completions on";
  const std::array<int, 2> cpus = *two;
  constexpr int rounds = 20'000;
  breaker_harness h{rule_of(degrade_grade::error_count, 1, 2, 1'000, 1)};
  spin_barrier barrier;
  int missed = 0;
  const auto completer = [&](std::size_t which) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[which], &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    for (int round = 0; round < rounds; ++round) {
      barrier.arrive_and_wait();
      // 0-63 loop turns, differently on each side, so the two stores land at varying offsets.
      for (int spin = (round * (which == 0 ? 7 : 13)) % 64; spin > 0; --spin) {
        asm volatile("" ::: "memory");  // a loop the compiler keeps
      }
      h.breaker.on_request_complete(h.clock.now_ms(), 5, true);
      barrier.arrive_and_wait();
      if (which == 0) {
        if (h.breaker.state() != open) ++missed;
        // Closed again for the next round: the probe's success empties the window.
        h.clock.advance_ms(1'000);
        if (h.breaker.try_pass(h.clock.now_ms()).outcome == admission::kind::probe) {
          h.breaker.on_request_complete(h.clock.now_ms(), 5, false);
        }
      }
      barrier.arrive_and_wait();
    }
  };
  {
    std::jthread other{completer, 1};
    completer(0);
  }
  EXPECT_EQ(h.breaker.state(), closed);
  EXPECT_EQ(missed, 0) << "rounds whose two errors left the breaker closed, of " << rounds;
}

TEST(CircuitBreakerConcurrency, TransitionsStayConsistentUnderConcurrentTraffic) {
  constexpr int threads = 4;
  constexpr int calls = 20'000;
  breaker_harness h{rule_of(degrade_grade::error_ratio, 0.3, 5, 100, 1)};
  std::atomic<std::uint64_t> notified{0};
  h.observers.add([&](breaker_state, breaker_state, const degrade_rule&, std::optional<double>) {
    notified.fetch_add(1, std::memory_order_relaxed);
  });
  std::vector<std::jthread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < calls; ++i) {
        if (t == 0 && i % 50 == 0) h.clock.advance_ms(37);
        if (h.breaker.try_pass(h.clock.now_ms()).outcome != admission::kind::block) {
          h.breaker.on_request_complete(h.clock.now_ms(), 1, (i + t) % 3 == 0);
        }
      }
    });
  }
  workers.clear();
  std::uint64_t total = 0;
  std::uint64_t into_open = 0;
  std::uint64_t out_of_open = 0;
  for (auto from : {closed, open, half_open}) {
    for (auto to : {closed, open, half_open}) {
      total += h.breaker.transitions(from, to);
    }
  }
  into_open = h.breaker.transitions(closed, open) + h.breaker.transitions(half_open, open);
  out_of_open = h.breaker.transitions(open, half_open);
  EXPECT_EQ(total, notified.load());
  EXPECT_GT(into_open, 0u);
  // Every stay in OPEN ends with a probe, except possibly the last.
  EXPECT_TRUE(out_of_open == into_open || out_of_open + 1 == into_open);
  EXPECT_EQ(h.breaker.transitions(open, closed), 0u);
  EXPECT_EQ(h.breaker.transitions(closed, half_open), 0u);
}

}  // namespace
}  // namespace floodgate
