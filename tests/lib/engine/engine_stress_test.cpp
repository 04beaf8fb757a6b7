// Many threads entering and exiting random resources while the clock rotates the windows:
// afterwards every total is exact. Runs under ThreadSanitizer in CI.
#include <floodgate/engine/engine.hpp>

#include "node/node_registry.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace floodgate {
namespace {

class block_on_flag final : public slot {
 public:
  int order() const noexcept override { return -2500; }
  slot_verdict on_entry(const check_context& ctx) noexcept override {
    if (!ctx.args.empty() && ctx.args[0].as_integer() == 1) {
      return slot_verdict::blocked({});
    }
    return slot_verdict::pass();
  }
};

// An audit: a concurrency rule renamed every 5 ms under 8 threads let 4 or 5 run against 3: the
// new rule started with no slots taken, and entries its predecessor had just admitted were not
// yet in the node's count. A changed rule now takes over its predecessor's slots.
TEST(EngineStress, AConcurrencyRuleChangedOverAndOverNeverAdmitsMoreThanItsCount) {
  engine eng;
  constexpr int count = 3;
  constexpr int reloads = 500;
  flow_rule rule{.resource = "res", .grade = flow_grade::concurrency, .count = count};
  ASSERT_TRUE(eng.load_rules({.flow = {rule}}));
  std::atomic<int> in_flight{0};
  std::atomic<int> most{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < 6; ++t) {
    pool.emplace_back([&] {
      context ctx{eng, "ctx"};
      while (!done.load(std::memory_order_relaxed)) {
        entry e = eng.enter(ctx, "res");
        if (!e) continue;
        const int now = in_flight.fetch_add(1) + 1;  // up after the pass, down before the exit
        for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
        }
        std::this_thread::yield();  // the work: others may enter meanwhile
        in_flight.fetch_sub(1);
      }
    });
  }
  for (int k = 0; k < reloads; ++k) {
    rule.name = "v" + std::to_string(k);  // a name is part of the rule: each load changes it
    ASSERT_TRUE(eng.load_rules({.flow = {rule}}));
    std::this_thread::yield();
  }
  done = true;
  for (auto& t : pool) t.join();
  EXPECT_LE(most.load(), count);
  EXPECT_EQ(eng.in_flight(), 0);
}

TEST(EngineStress, ConcurrentEntriesKeepExactTotalsWhileWindowsRotate) {
  manual_clock clock;
  engine eng{engine_options{.time = &clock}};
  eng.add_slot(std::make_shared<block_on_flag>());

  constexpr int resources = 8;
  constexpr int threads = 4;
  constexpr int iterations = 20000;
  struct counts {
    std::atomic<long> attempts{0}, blocked{0}, errors{0};
  };
  std::array<counts, resources> expected;
  std::array<std::string, resources> names;
  for (int i = 0; i < resources; ++i) names[i] = "res" + std::to_string(i);

  std::atomic<int> running{threads};
  std::thread ticker([&] {
    // At most 500 x 100 ms: everything stays inside the one-minute window.
    for (int i = 0; i < 500 && running.load() > 0; ++i) {
      clock.advance_ms(100);
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int i = 0; i < iterations; ++i) {
        const int r = static_cast<int>(rng() % resources);
        const bool block = rng() % 5 == 0;
        const bool error = rng() % 7 == 0;
        context ctx{eng, t % 2 == 0 ? "even" : "odd", t % 2 == 0 ? "a" : "b"};
        const param_value args[] = {block ? 1 : 0};
        auto e = eng.enter(ctx, names[r], {.type = entry_type::inbound, .args = args});
        expected[r].attempts.fetch_add(1);
        if (e.blocked()) {
          expected[r].blocked.fetch_add(1);
          continue;
        }
        if (error) {
          e.trace_error();
          expected[r].errors.fetch_add(1);
        }
      }
      running.fetch_sub(1);
    });
  }
  for (auto& th : pool) th.join();
  ticker.join();

  const auto now = clock.now_ms();
  long all_attempts = 0;
  for (int r = 0; r < resources; ++r) {
    const auto* n = eng.nodes().find_resource(names[r]);
    ASSERT_NE(n, nullptr);
    const auto& totals = n->totals();
    std::uint64_t blocked = 0;
    for (const auto& b : totals.blocked) blocked += b.load();
    const auto attempts = static_cast<std::uint64_t>(expected[r].attempts.load());
    const auto passed = attempts - static_cast<std::uint64_t>(expected[r].blocked.load());
    EXPECT_EQ(totals.passed.load() + blocked, attempts) << names[r];
    EXPECT_EQ(blocked, static_cast<std::uint64_t>(expected[r].blocked.load()));
    EXPECT_EQ(totals.completed(), passed);
    EXPECT_EQ(totals.errors.load(), static_cast<std::uint64_t>(expected[r].errors.load()));
    EXPECT_EQ(n->concurrency(), 0);
    // The windows lost nothing either.
    EXPECT_EQ(n->total_request(now), attempts);
    EXPECT_EQ(n->total_success(now), passed);
    EXPECT_EQ(n->total_exception(now), static_cast<std::uint64_t>(expected[r].errors.load()));
    all_attempts += expected[r].attempts.load();
  }
  EXPECT_EQ(eng.nodes().inbound().concurrency(), 0);
  EXPECT_EQ(eng.nodes().inbound().total_request(now), static_cast<std::uint64_t>(all_attempts));
}

}  // namespace
}  // namespace floodgate
