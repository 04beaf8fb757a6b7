// The flow slot through the engine: rule order, block details, dry runs, refunds, reloads, races.
#include <floodgate/engine/engine.hpp>

#include "node/node_registry.hpp"

#include "lib/support/held_rounds.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace floodgate {
namespace {

flow_rule qps(double count, std::string limit_app = "default") {
  flow_rule r;
  r.resource = "res";
  r.count = count;
  r.limit_app = std::move(limit_app);
  return r;
}

struct FlowSlot : ::testing::Test {
  manual_clock clock{1'000'000};
  engine eng{engine_options{.time = &clock}};
  context ctx{eng, "ctx"};

  void load(std::vector<flow_rule> flow) {
    rule_set rules;
    rules.flow = std::move(flow);
    ASSERT_TRUE(eng.load_rules(rules).ok());
  }
  const node::cluster_node& cluster() const { return *eng.nodes().find_resource("res"); }
};

TEST_F(FlowSlot, BlockNamesTheRuleAndWhenToRetry) {
  flow_rule elsewhere = qps(100);
  elsewhere.resource = "other";
  load({elsewhere, qps(2)});
  clock.set_ms(1'000'100);
  EXPECT_TRUE(eng.enter(ctx, "res"));
  EXPECT_TRUE(eng.enter(ctx, "res"));
  clock.set_ms(1'000'400);
  auto e = eng.enter(ctx, "res");
  ASSERT_TRUE(e.blocked());
  EXPECT_EQ(e.block().reason, block_reason::flow);
  EXPECT_EQ(e.block().rule_index, 1);
  EXPECT_EQ(e.block().retry_after, std::chrono::milliseconds(600));  // passes leave at 1'001'000
}

TEST_F(FlowSlot, RulesForASpecificOriginAreCheckedBeforeDefault) {
  load({qps(0), qps(0, "appA")});
  context app_a{eng, "ctx", "appA"};
  auto e = eng.enter(app_a, "res");
  ASSERT_TRUE(e.blocked());
  EXPECT_EQ(e.block().rule_index, 1);
}

TEST_F(FlowSlot, ABlankLimitAppLimitsEveryCallerAsDefaultDoes) {
  load({qps(0, "  ")});  // Sentinel's rule manager reads a blank limitApp as default
  context app_a{eng, "ctx", "appA"};
  EXPECT_TRUE(eng.enter(app_a, "res").blocked());
  EXPECT_TRUE(eng.enter(ctx, "res").blocked());
}

TEST_F(FlowSlot, EveryApplicableRuleMustPass) {
  load({qps(5), qps(1, "appA")});
  context app_a{eng, "ctx", "appA"};
  EXPECT_TRUE(eng.enter(app_a, "res"));
  EXPECT_TRUE(eng.enter(app_a, "res").blocked());  // appA's own limit
  EXPECT_TRUE(eng.enter(ctx, "res"));              // others only see the default rule
}

TEST_F(FlowSlot, DryRunCountsTheWouldBeBlockAndLetsTheRequestPass) {
  flow_rule r = qps(1);
  r.dry_run = true;
  load({r});
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(eng.enter(ctx, "res"));
  EXPECT_EQ(cluster().totals().dry_run_blocks.load(), 2u);
  EXPECT_EQ(cluster().totals().passed.load(), 3u);
}

TEST_F(FlowSlot, DryRunThrottlingNeverDelays) {
  flow_rule r = qps(10);
  r.behavior = control_behavior::throttling;
  r.dry_run = true;
  load({r});
  for (int i = 0; i < 8; ++i) {
    auto e = eng.enter(ctx, "res");
    ASSERT_TRUE(e);
    EXPECT_EQ(e.wait().count(), 0);
  }
  EXPECT_EQ(cluster().totals().dry_run_blocks.load(), 2u);  // the 7th and 8th overflow 500 ms
}

TEST_F(FlowSlot, AdmissionIsGivenBackWhenALaterSlotBlocks) {
  struct block_once : slot {
    std::atomic<int> calls{0};
    int order() const noexcept override { return slot_order::flow + 500; }
    slot_verdict on_entry(const check_context&) noexcept override {
      return calls.fetch_add(1) == 0 ? slot_verdict::blocked({}) : slot_verdict::pass();
    }
  };
  eng.add_slot(std::make_shared<block_once>());
  load({qps(1)});
  EXPECT_TRUE(eng.enter(ctx, "res").blocked());  // flow admitted it, the user slot blocked it
  EXPECT_TRUE(eng.enter(ctx, "res"));            // so the one pass is still free
  EXPECT_TRUE(eng.enter(ctx, "res").blocked());
}

/// A user slot after the flow slot that, once armed, enters "res" again as origin `origin` from
/// inside the check: that second entry runs between the first one's flow check and the record
/// of its pass, where a racing thread would.
struct enter_between_check_and_record : slot {
  engine* eng = nullptr;
  std::string origin;
  bool armed = false;
  std::optional<bool> inner_passed;
  int order() const noexcept override { return slot_order::degrade + 1; }
  slot_verdict on_entry(const check_context&) noexcept override {
    if (armed) {
      armed = false;
      context inner{*eng, "inner", origin};
      inner_passed = eng->enter(inner, "res").passed();
    }
    return slot_verdict::pass();
  }
};

/// An engine with one flow rule and an enter_between_check_and_record slot entering as `origin`.
struct race_setup {
  engine e;
  std::shared_ptr<enter_between_check_and_record> racer =
      std::make_shared<enter_between_check_and_record>();
  race_setup(const clock& time, const flow_rule& r, std::string origin)
      : e{engine_options{.time = &time}} {
    racer->eng = &e;
    racer->origin = std::move(origin);
    e.add_slot(racer);
    EXPECT_TRUE(e.load_rules({.flow = {r}}).ok());
  }
};

/// `r` as a QPS rule and as a concurrency rule.
std::vector<flow_rule> both_grades(flow_rule r) {
  flow_rule c = r;
  c.grade = flow_grade::concurrency;
  return {r, c};
}

// SPEC §8: no check-then-act overshoot, also for a chain rule whose context node every origin of
// the context writes (limitApp named or `other`).
TEST_F(FlowSlot, AChainRuleOnASharedNodeSeesAnEntryBetweenAnotherOnesCheckAndRecord) {
  flow_rule chain = qps(2, "x");
  chain.strategy = flow_strategy::chain;
  chain.ref_resource = "inner";
  for (const flow_rule& r : both_grades(chain)) {
    SCOPED_TRACE(r.grade == flow_grade::concurrency ? "concurrency" : "qps");
    race_setup race{clock, r, "x"};
    context c{race.e, "inner", "x"};
    auto first = race.e.enter(c, "res");
    ASSERT_TRUE(first);
    race.racer->armed = true;
    auto second = race.e.enter(c, "res");
    EXPECT_TRUE(second);
    ASSERT_TRUE(race.racer->inner_passed.has_value());
    EXPECT_FALSE(*race.racer->inner_passed) << "the second entry's pass makes 2 of 2";
  }
}

// An `other` rule limits each origin on its own node: one origin's admission under way must not
// count against another's.
TEST_F(FlowSlot, AnOtherRuleDoesNotCountOneOriginsAdmissionAgainstAnother) {
  for (const flow_rule& r : both_grades(qps(1, "other"))) {
    SCOPED_TRACE(r.grade == flow_grade::concurrency ? "concurrency" : "qps");
    race_setup race{clock, r, "b"};
    context c{race.e, "ctx", "a"};
    race.racer->armed = true;
    EXPECT_TRUE(race.e.enter(c, "res"));
    ASSERT_TRUE(race.racer->inner_passed.has_value());
    EXPECT_TRUE(*race.racer->inner_passed) << "origin b has its own count of 1";
  }
}

// With room in the window, a thread books passes ahead (a lease) and later entries spend them
// inline; a pass spent from the lease and then blocked by a later slot must be given back too.
TEST_F(FlowSlot, LeasedPassesAreGivenBackWhenALaterSlotBlocks) {
  struct block_first : slot {
    int calls = 0;
    int order() const noexcept override { return slot_order::flow + 500; }
    slot_verdict on_entry(const check_context&) noexcept override {
      return ++calls <= 10 ? slot_verdict::blocked({}) : slot_verdict::pass();
    }
  };
  eng.add_slot(std::make_shared<block_first>());
  flow_rule wider = qps(200);
  load({qps(100), wider});  // two rules on the resource's own node: both lease
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(eng.enter(ctx, "res").blocked());
  }
  int passed = 0;
  for (int i = 0; i < 150; ++i) {
    passed += eng.enter(ctx, "res") ? 1 : 0;
  }
  EXPECT_EQ(passed, 100);  // every pass the blocked entries took came back
  EXPECT_EQ(cluster().window_sum(stat::metric_event::pass, clock.now_ms()), 100u);
}

TEST_F(FlowSlot, AnEarlierRulesAdmissionIsGivenBackWhenALaterRuleBlocks) {
  flow_rule per_origin = qps(1, "appA");
  load({qps(1), per_origin});
  context app_a{eng, "ctx", "appA"};
  EXPECT_TRUE(eng.enter(app_a, "res"));
  // appA's rule (checked first) blocks now: nothing is booked in the default rule either.
  EXPECT_TRUE(eng.enter(app_a, "res").blocked());
  EXPECT_TRUE(eng.enter(ctx, "res").blocked());  // the default rule's one pass went to appA
}

TEST_F(FlowSlot, ConcurrencySlotIsReleasedOnExit) {
  flow_rule r = qps(1);
  r.grade = flow_grade::concurrency;
  load({r});
  for (int i = 0; i < 3; ++i) {
    auto e = eng.enter(ctx, "res");
    ASSERT_TRUE(e) << i;
  }
}

TEST_F(FlowSlot, ConcurrencySlotIsReleasedWhenALaterSlotBlocks) {
  struct block_first : slot {
    std::atomic<int> calls{0};
    int order() const noexcept override { return slot_order::degrade + 1; }
    slot_verdict on_entry(const check_context&) noexcept override {
      return calls.fetch_add(1) == 0 ? slot_verdict::blocked({}) : slot_verdict::pass();
    }
  };
  eng.add_slot(std::make_shared<block_first>());
  flow_rule r = qps(1);
  r.grade = flow_grade::concurrency;
  load({r});
  EXPECT_TRUE(eng.enter(ctx, "res").blocked());
  auto e = eng.enter(ctx, "res");
  EXPECT_TRUE(e);
}

TEST_F(FlowSlot, PrioritizedEntryWaitsForTheNextWindowInsteadOfBeingBlocked) {
  load({qps(1)});
  clock.set_ms(1'000'700);
  EXPECT_TRUE(eng.enter(ctx, "res"));
  EXPECT_TRUE(eng.enter(ctx, "res").blocked());
  // The pass at 1'000'700 leaves the interval at 1'001'500: too far for the 500 ms timeout.
  EXPECT_TRUE(eng.enter(ctx, "res", {.prioritized = true}).blocked());
  clock.set_ms(1'001'200);
  EXPECT_TRUE(eng.enter(ctx, "res").blocked());
  auto e = eng.enter(ctx, "res", {.prioritized = true});
  ASSERT_TRUE(e);
  EXPECT_EQ(e.wait(), std::chrono::milliseconds(300));
  // Booked into the coming window: counted there, not now.
  EXPECT_EQ(cluster().waiting(clock.now_ms()), 1u);
  clock.set_ms(1'001'500);
  EXPECT_TRUE(eng.enter(ctx, "res").blocked());
}

TEST_F(FlowSlot, ThrottlingWaitIsReturnedToTheCaller) {
  flow_rule r = qps(10);
  r.behavior = control_behavior::throttling;
  load({r});
  EXPECT_EQ(eng.enter(ctx, "res").wait().count(), 0);
  EXPECT_EQ(eng.enter(ctx, "res").wait(), std::chrono::milliseconds(100));
}

TEST_F(FlowSlot, UnchangedRuleKeepsItsStateAcrossAReload) {
  flow_rule r = qps(10);
  r.behavior = control_behavior::throttling;
  flow_rule unrelated = qps(1);
  unrelated.resource = "other";
  load({r, unrelated});
  ASSERT_EQ(eng.enter(ctx, "res").wait().count(), 0);
  unrelated.count = 2;
  load({unrelated, r});  // moved and the neighbour changed: still the same rule
  EXPECT_EQ(eng.enter(ctx, "res").wait(), std::chrono::milliseconds(100));
  r.count = 5;
  load({r});  // a changed rule starts fresh
  EXPECT_EQ(eng.enter(ctx, "res").wait().count(), 0);
}

TEST_F(FlowSlot, UnchangedRuleKeepsItsAdmissionsAcrossAReload) {
  load({qps(2)});
  EXPECT_TRUE(eng.enter(ctx, "res"));
  EXPECT_TRUE(eng.enter(ctx, "res"));
  load({qps(2)});
  EXPECT_TRUE(eng.enter(ctx, "res").blocked());
}

TEST_F(FlowSlot, WarmUpTokensCarryOverAReload) {
  flow_rule r = qps(10);
  r.behavior = control_behavior::warm_up;
  load({r});
  // Cold: 3.33 QPS lets 3 through in the first second.
  int cold = 0;
  for (int i = 0; i < 10; ++i) cold += eng.enter(ctx, "res") ? 1 : 0;
  EXPECT_EQ(cold, 3);
  load({r});
  EXPECT_TRUE(eng.enter(ctx, "res").blocked());  // still cold, still counted
}

TEST_F(FlowSlot, IdenticalRulesAreCheckedOnce) {
  load({qps(2), qps(2)});
  EXPECT_TRUE(eng.enter(ctx, "res"));
  EXPECT_TRUE(eng.enter(ctx, "res"));  // counted once, not twice
  EXPECT_TRUE(eng.enter(ctx, "res").blocked());
}

// Threads race at fixed clock readings; between rounds the clock moves 100 ms. Passes per round
// are summed per 500 ms window: no 1 s interval (two windows) may exceed the count.
void race_qps(int threads) {
  manual_clock clock{1'000'000};
  engine eng{engine_options{.time = &clock}};
  rule_set rules;
  rules.flow = {qps(25)};
  ASSERT_TRUE(eng.load_rules(rules).ok());
  std::map<std::int64_t, std::int64_t> per_window;
  std::atomic<std::int64_t> round_passes{0};
  std::barrier sync(threads, [&]() noexcept {
    per_window[clock.now_ms() / 500] += round_passes.exchange(0);
    clock.advance_ms(100);
  });
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([&] {
      context ctx{eng, "ctx"};
      for (int round = 0; round < 40; ++round) {
        for (int k = 0; k < 20; ++k) {
          if (eng.enter(ctx, "res")) round_passes.fetch_add(1);
        }
        sync.arrive_and_wait();
      }
    });
  }
  for (auto& t : pool) t.join();
  // Under a flood each second passes exactly the count: no more, and none short either.
  EXPECT_EQ(per_window.begin()->second, 25);
  for (const auto& [w, n] : per_window) {
    const auto prev = per_window.find(w - 1);
    if (prev != per_window.end()) {
      EXPECT_EQ(n + prev->second, 25) << "window " << w;
    }
  }
}

// SPEC §8: under a flood with any number of threads a QPS rule passes at least N-2 per full
// second; passes leased to a thread (or CPU) that stopped entering must not starve the window.
// The main thread enters first and goes idle, as a server's start-up does; then a pool floods
// three seconds in 20 ms steps.
void flood_passes_count_every_second(int threads) {
  manual_clock clock{1'000'000};  // the start of a second
  engine eng{engine_options{.time = &clock}};
  rule_set rules;
  rules.flow = {qps(100)};
  ASSERT_TRUE(eng.load_rules(rules).ok());
  std::atomic<int> passes{0};
  {
    context main_ctx{eng, "ctx"};
    if (eng.enter(main_ctx, "res")) passes.fetch_add(1);
  }
  std::vector<int> per_second;
  int step = 0;
  std::barrier sync(threads, [&]() noexcept {
    clock.advance_ms(20);
    if (++step % 50 == 0) per_second.push_back(passes.exchange(0));
  });
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([&] {
      context ctx{eng, "ctx"};
      for (int k = 0; k < 150; ++k) {
        for (int j = 0; j < 40; ++j) {
          if (eng.enter(ctx, "res")) passes.fetch_add(1);
        }
        sync.arrive_and_wait();
      }
    });
  }
  for (auto& t : pool) t.join();
  ASSERT_EQ(per_second.size(), 3u);
  for (std::size_t s = 0; s < per_second.size(); ++s) {
    EXPECT_GE(per_second[s], 98) << "second " << s << ", " << threads << " threads";
    EXPECT_LE(per_second[s], 100) << "second " << s << ", " << threads << " threads";
  }
}

TEST(FlowSlotRace, AFloodOfFourThreadsPassesTheCountEverySecond) {
  flood_passes_count_every_second(4);
}
TEST(FlowSlotRace, AFloodOfSixteenThreadsPassesTheCountEverySecond) {
  flood_passes_count_every_second(16);
}

TEST(FlowSlotRace, TwoThreadsNeverAdmitMoreThanCountPerWindow) { race_qps(2); }
TEST(FlowSlotRace, FourThreadsNeverAdmitMoreThanCountPerWindow) { race_qps(4); }
TEST(FlowSlotRace, EightThreadsNeverAdmitMoreThanCountPerWindow) { race_qps(8); }

TEST(FlowSlotRace, ConcurrencyRuleNeverHasMoreThanCountInFlight) {
  for (const int threads : {2, 4, 8}) {
    manual_clock clock;
    engine eng{engine_options{.time = &clock}};
    rule_set rules;
    flow_rule r = qps(3);
    r.grade = flow_grade::concurrency;
    rules.flow = {r};
    ASSERT_TRUE(eng.load_rules(rules).ok());
    std::vector<std::unique_ptr<context>> contexts;
    for (int t = 0; t < threads; ++t) contexts.push_back(std::make_unique<context>(eng, "ctx"));
    std::vector<entry> held(static_cast<std::size_t>(threads));
    const auto admitted = test_support::admitted_per_round(
        threads, 300,
        [&](int t) {
          auto& e = held[static_cast<std::size_t>(t)];
          e = eng.enter(*contexts[static_cast<std::size_t>(t)], "res");
          return static_cast<bool>(e);
        },
        [&](int t) { held[static_cast<std::size_t>(t)].exit(); });
    for (std::size_t round = 0; round < admitted.size(); ++round) {
      ASSERT_EQ(admitted[round], std::min(threads, 3)) << threads << " threads, round " << round;
    }
    held.clear();  // every entry exits before its context goes
    EXPECT_EQ(eng.nodes().find_resource("res")->concurrency(), 0);
  }
}

}  // namespace
}  // namespace floodgate
