// Hot-parameter state under racing threads: no overshoot, no lost in-flight counts, bounded
// memory while values are evicted concurrently. Meant to run under ThreadSanitizer too.
#include "param/param_slot.hpp"

#include "lib/support/held_rounds.hpp"
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
  const std::array<param_value, 1> hot{"hot"};
  std::array<entry_tokens, 4> held{};
  // The value is tracked before the race: threads racing to insert it may find its set busy,
  // and then pass untracked (fail open), which is not what this test measures.
  entry_tokens first;
  ASSERT_EQ(r->check(h.check({}, entry_type::inbound, hot), first).outcome,
            slot_verdict::kind::pass);
  r->on_exit(h.exit(), first);
  const auto admitted = test_support::admitted_per_round(
      4, 500,
      [&](int t) {
        auto& tokens = held[static_cast<std::size_t>(t)];
        tokens = {};
        return r->check(h.check({}, entry_type::inbound, hot), tokens).outcome ==
               slot_verdict::kind::pass;
      },
      [&](int t) { r->on_exit(h.exit(), held[static_cast<std::size_t>(t)]); });
  for (std::size_t round = 0; round < admitted.size(); ++round) {
    ASSERT_EQ(admitted[round], 3) << "round " << round;
  }
  entry_tokens a, b, c, d;
  const std::array<param_value, 1> args{"hot"};
  EXPECT_EQ(r->check(h.check({}, entry_type::inbound, args), a).outcome, slot_verdict::kind::pass);
  EXPECT_EQ(r->check(h.check({}, entry_type::inbound, args), b).outcome, slot_verdict::kind::pass);
  EXPECT_EQ(r->check(h.check({}, entry_type::inbound, args), c).outcome, slot_verdict::kind::pass);
  EXPECT_EQ(r->check(h.check({}, entry_type::inbound, args), d).outcome, slot_verdict::kind::block)
      << "every count taken during the race was given back";
}

TEST(ParamFlowRaces, ConcurrentFloodsWithHeldEntriesStayBounded) {
  // Each thread floods new values while holding its last 64 entries: held values compete with
  // the flood for slots, and a value with an entry in flight keeps its count.
  constexpr std::size_t kept = 64;
  slot_harness h;
  const auto r = build(rule(flow_grade::concurrency, 1));
  std::atomic<int> held_at_end{0};
  std::atomic<int> refused_again{0};
  on_threads(4, [&](int thread) {
    std::array<entry_tokens, kept> tokens{};
    std::array<std::int64_t, kept> values{};
    const auto exit_slot = [&](std::size_t k) {
      if (tokens[k].param_held_count != 0) r->on_exit(h.exit(), tokens[k]);
      tokens[k] = {};
    };
    for (std::int64_t i = 0; i < 20'000; ++i) {
      const auto k = static_cast<std::size_t>(i) % kept;
      exit_slot(k);
      values[k] = thread * 1'000'000 + i;
      const std::array<param_value, 1> args{values[k]};
      (void)r->check(h.check({}, entry_type::inbound, args), tokens[k]);
    }
    EXPECT_LE(r->tracked_values(), r->value_capacity());
    for (std::size_t k = 0; k < kept; ++k) {
      if (tokens[k].param_held_count == 0) continue;
      held_at_end.fetch_add(1);
      const std::array<param_value, 1> args{values[k]};
      entry_tokens again;
      if (r->check(h.check({}, entry_type::inbound, args), again).outcome ==
          slot_verdict::kind::block) {
        refused_again.fetch_add(1);
      } else if (again.param_held_count != 0) {
        r->on_exit(h.exit(), again);
      }
    }
    for (std::size_t k = 0; k < kept; ++k) exit_slot(k);
  });
  EXPECT_GT(held_at_end.load(), 0);
  EXPECT_EQ(refused_again.load(), held_at_end.load())
      << "a value with an entry in flight was evicted and its count lost";
  EXPECT_LE(r->tracked_values(), r->value_capacity());
  EXPECT_EQ(r->value_capacity(), 4000u);
}

}  // namespace
}  // namespace floodgate
