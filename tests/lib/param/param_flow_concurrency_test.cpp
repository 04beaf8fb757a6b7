// Hot-parameter state under racing threads: no overshoot, no lost in-flight counts, bounded
// memory while values are evicted concurrently. Meant to run under ThreadSanitizer too.
#include "param/param_slot.hpp"

#include "lib/support/slot_harness.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <thread>
#include <vector>

namespace floodgate {
namespace {

using test_support::slot_harness;

std::unique_ptr<resource_param_rules> build(const param_flow_rule& rule) {
  return resource_param_rules::build({{rule, 0}}, nullptr, true);
}

param_flow_rule rule(flow_grade grade, double count) {
  param_flow_rule r;
  r.resource = "res";
  r.param_idx = 0;
  r.grade = grade;
  r.count = count;
  return r;
}

template <class F>
void on_threads(int n, F f) {
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) threads.emplace_back([&f, t] { f(t); });
  for (auto& th : threads) th.join();
}

TEST(ParamFlowRaces, RacingThreadsNeverPassMoreThanTheCount) {
  slot_harness h;
  const auto r = build(rule(flow_grade::qps, 100));
  std::atomic<int> passed{0};
  on_threads(4, [&](int) {
    const std::array<param_value, 1> args{"hot"};
    for (int i = 0; i < 5000; ++i) {
      entry_tokens t;
      if (r->check(h.check({}, entry_type::inbound, args), t).outcome == slot_verdict::kind::pass) {
        passed.fetch_add(1);
      }
    }
  });
  EXPECT_EQ(passed.load(), 100);
}

TEST(ParamFlowRaces, InFlightPerValueNeverExceedsTheCount) {
  slot_harness h;
  const auto r = build(rule(flow_grade::concurrency, 3));
  std::atomic<int> in_flight{0};
  std::atomic<int> most{0};
  on_threads(4, [&](int) {
    const std::array<param_value, 1> args{"hot"};
    for (int i = 0; i < 5000; ++i) {
      entry_tokens t;
      if (r->check(h.check({}, entry_type::inbound, args), t).outcome != slot_verdict::kind::pass) {
        continue;
      }
      const int now = in_flight.fetch_add(1) + 1;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      in_flight.fetch_sub(1);
      r->on_exit(h.exit(), t);
    }
  });
  EXPECT_LE(most.load(), 3);
  EXPECT_GE(most.load(), 1);
  entry_tokens a, b, c, d;
  const std::array<param_value, 1> args{"hot"};
  EXPECT_EQ(r->check(h.check({}, entry_type::inbound, args), a).outcome, slot_verdict::kind::pass);
  EXPECT_EQ(r->check(h.check({}, entry_type::inbound, args), b).outcome, slot_verdict::kind::pass);
  EXPECT_EQ(r->check(h.check({}, entry_type::inbound, args), c).outcome, slot_verdict::kind::pass);
  EXPECT_EQ(r->check(h.check({}, entry_type::inbound, args), d).outcome, slot_verdict::kind::block)
      << "every count taken during the race was given back";
}

TEST(ParamFlowRaces, ConcurrentFloodsWithHeldEntriesStayBounded) {
  slot_harness h;
  const auto r = build(rule(flow_grade::concurrency, 1));
  on_threads(4, [&](int thread) {
    for (std::int64_t i = 0; i < 20'000; ++i) {
      const std::array<param_value, 1> args{thread * 1'000'000 + i};
      entry_tokens t;
      (void)r->check(h.check({}, entry_type::inbound, args), t);
      r->on_exit(h.exit(), t);
    }
  });
  EXPECT_LE(r->tracked_values(), r->value_capacity());
  EXPECT_EQ(r->value_capacity(), 4000u);
}

}  // namespace
}  // namespace floodgate
