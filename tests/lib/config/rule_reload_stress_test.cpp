// Reloads racing requests: every request sees one complete rule set, and unchanged rules keep
// their state. Run under ThreadSanitizer in CI (the name says Concurrent).
#include <floodgate/config/rule_file.hpp>
#include <floodgate/config/rule_file_watcher.hpp>
#include <floodgate/chain/clock.hpp>
#include <floodgate/engine/context.hpp>
#include <floodgate/engine/engine.hpp>

#include "lib/config/temp_dir.hpp"

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace floodgate::config {
namespace {

/* Set A blocks r1 by flow and r2 by authority; set B the other way round. In either complete set
   both resources are blocked. A request that saw the flow rules of one set and the authority
   rules of the other would find one of them with no rule at all and pass: any pass is a mix.
   Both sets hold the same breaker on r3, tripped before the reloads: it must stay open. */
constexpr const char* set_a = R"(
flow:
  - {resource: r1, count: 0}
authority:
  - {resource: r2, strategy: black, limitApp: x}
degrade:
  - {resource: r3, grade: error_count, count: 1, minRequestAmount: 1, timeWindow: 60}
)";
constexpr const char* set_b = R"(
flow:
  - {resource: r2, count: 0}
authority:
  - {resource: r1, strategy: black, limitApp: x}
degrade:
  - {resource: r3, grade: error_count, count: 1, minRequestAmount: 1, timeWindow: 60}
)";

/// The assertion below can fail: a mix of the two sets lets a request through.
TEST(RuleReloadConcurrent, AMixOfTheTwoSetsWouldLetARequestPass) {
  const parse_result a = parse_rules(set_a, "a.yaml");
  const parse_result b = parse_rules(set_b, "b.yaml");
  ASSERT_TRUE(a.ok() && b.ok());
  for (const bool flow_from_a : {true, false}) {
    rule_set mix = flow_from_a ? *a.rules : *b.rules;
    mix.authority = flow_from_a ? b.rules->authority : a.rules->authority;
    engine eng;
    ASSERT_TRUE(eng.load_rules(mix).ok());
    int passed = 0;
    for (const char* resource : {"r1", "r2"}) {
      context ctx{eng, "http-inbound", "x"};
      passed += eng.enter(ctx, resource, {.type = entry_type::inbound}).passed() ? 1 : 0;
    }
    EXPECT_EQ(passed, 1);
  }
}

TEST(RuleReloadConcurrent, EveryRequestSeesOneCompleteRuleSetAndUnchangedBreakersStayOpen) {
  testing::temp_dir dir;
  const std::string path = dir.write("rules.yaml", set_a);
  manual_clock clock;  // frozen: only the rules can change an outcome
  engine eng({.time = &clock});
  boost::asio::io_context io;  // never run: reloads come from reload_now()
  rule_file_watcher watcher(io.get_executor(), eng, path);
  ASSERT_TRUE(watcher.start().ok());

  // Trip the breaker on r3 with errors.
  for (int i = 0; i < 10; ++i) {
    context ctx{eng, "http-inbound", "x"};
    entry e = eng.enter(ctx, "r3", {.type = entry_type::inbound});
    if (e.blocked()) break;
    e.trace_error();
  }
  {
    context ctx{eng, "http-inbound", "x"};
    const entry e = eng.enter(ctx, "r3", {.type = entry_type::inbound});
    ASSERT_TRUE(e.blocked());
    ASSERT_EQ(e.block().reason, block_reason::degrade);
  }

  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> checks{0};
  std::atomic<std::uint64_t> mixed{0};          // r1 or r2 passed
  std::atomic<std::uint64_t> breaker_reset{0};  // r3 passed
  std::atomic<std::uint64_t> status_failures{0};
  std::vector<std::thread> requests;
  for (int t = 0; t < 2; ++t) {
    requests.emplace_back([&] {
      while (!done.load(std::memory_order_relaxed)) {
        for (const char* resource : {"r1", "r2"}) {
          context ctx{eng, "http-inbound", "x"};
          const entry e = eng.enter(ctx, resource, {.type = entry_type::inbound});
          if (e.passed()) mixed.fetch_add(1, std::memory_order_relaxed);
        }
        context ctx{eng, "http-inbound", "x"};
        const entry e = eng.enter(ctx, "r3", {.type = entry_type::inbound});
        if (e.passed() || e.block().reason != block_reason::degrade) {
          breaker_reset.fetch_add(1, std::memory_order_relaxed);
        }
        checks.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  std::thread status_reader([&] {
    while (!done.load(std::memory_order_relaxed)) {
      const reload_status s = watcher.status();
      if (!s.ok) status_failures.fetch_add(1, std::memory_order_relaxed);
      std::this_thread::yield();
    }
  });

  int failed_reloads = 0;
  for (int i = 0; i < 1000; ++i) {
    dir.write("rules.yaml", i % 2 == 0 ? set_b : set_a);
    if (!watcher.reload_now().ok()) ++failed_reloads;
  }
  done = true;
  for (auto& t : requests) t.join();
  status_reader.join();

  EXPECT_EQ(failed_reloads, 0);
  EXPECT_EQ(status_failures.load(), 0u);
  EXPECT_EQ(mixed.load(), 0u);
  EXPECT_EQ(breaker_reset.load(), 0u);
  EXPECT_GT(checks.load(), 0u);
  EXPECT_EQ(watcher.status().successes, 1001u);
  EXPECT_EQ(eng.rules().flow.at(0).resource, "r1");  // the last write was set A

  context ctx{eng, "http-inbound", "x"};
  const entry e = eng.enter(ctx, "r3", {.type = entry_type::inbound});
  EXPECT_TRUE(e.blocked());
}

}  // namespace
}  // namespace floodgate::config
