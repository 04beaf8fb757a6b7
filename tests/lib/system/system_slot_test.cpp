// System rules: validation, merging (Sentinel's SystemRuleManagerTest) and each limit in isolation.
#include <floodgate/system/manual_system_status.hpp>
#include "system/system_slot.hpp"

#include "lib/support/slot_harness.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace floodgate {
namespace {

using test_support::slot_harness;

/// Builds a system rule field by field: `sys().qps(5).rt(50)`.
struct sys {
  system_rule r;
  sys& load(double v) {
    r.highest_system_load = v;
    return *this;
  }
  sys& cpu(double v) {
    r.highest_cpu_usage = v;
    return *this;
  }
  sys& rt(double v) {
    r.avg_rt = v;
    return *this;
  }
  sys& thread(double v) {
    r.max_thread = v;
    return *this;
  }
  sys& qps(double v) {
    r.qps = v;
    return *this;
  }
  operator system_rule() const { return r; }  // NOLINT: reads as a rule in tables
};

std::unique_ptr<system_guard> guard(std::vector<system_rule> rules,
                                    std::shared_ptr<const system_status_source> status = nullptr) {
  std::vector<indexed_rule<system_rule>> indexed;
  for (std::size_t i = 0; i < rules.size(); ++i) {
    indexed.push_back({rules[i], static_cast<std::int32_t>(i)});
  }
  return system_guard::build(std::move(indexed), std::move(status));
}

slot_verdict::kind outcome(const system_guard& g, slot_harness& h,
                           entry_type type = entry_type::inbound) {
  return g.check(h.check({}, type)).outcome;
}

constexpr auto pass = slot_verdict::kind::pass;
constexpr auto block = slot_verdict::kind::block;

// --- validation ------------------------------------------------------------------------------

struct system_case {
  system_rule rule;
  std::vector<rule_error> errors;
};

class SystemRuleValidation : public ::testing::TestWithParam<system_case> {};

TEST_P(SystemRuleValidation, ReportsEveryProblemWithItsPath) {
  std::vector<rule_error> errors;
  validate(GetParam().rule, "system[1]", errors);
  EXPECT_EQ(errors, GetParam().errors);
}

const char* const threshold_msg = "must be >= 0, or -1 (off)";
const char* const cpu_msg = "must be between 0 and 1, or -1 (off)";

INSTANTIATE_TEST_SUITE_P(
    Rules, SystemRuleValidation,
    ::testing::Values(
        system_case{{}, {}}, system_case{sys().load(1.2).cpu(0.7).rt(50).thread(17).qps(1500), {}},
        system_case{sys().cpu(0), {}}, system_case{sys().cpu(1), {}},
        // Sentinel's SystemRuleManagerTest loads neither of these; here they are errors.
        system_case{sys().load(-0.9), {{"system[1].highestSystemLoad", threshold_msg}}},
        system_case{sys().cpu(2.7), {{"system[1].highestCpuUsage", cpu_msg}}},
        system_case{sys().cpu(-0.5), {{"system[1].highestCpuUsage", cpu_msg}}},
        system_case{sys().rt(-2).thread(-3).qps(-1.5),
                    {{"system[1].avgRt", threshold_msg},
                     {"system[1].maxThread", threshold_msg},
                     {"system[1].qps", threshold_msg}}},
        system_case{sys().qps(std::numeric_limits<double>::quiet_NaN()),
                    {{"system[1].qps", threshold_msg}}},
        // Longs in Sentinel; a rule file (which reads them as integers) could not hold these.
        system_case{sys().rt(1.5).thread(2.5),
                    {{"system[1].avgRt", "must be an integer of at most 9007199254740991"},
                     {"system[1].maxThread", "must be an integer of at most 9007199254740991"}}},
        system_case{sys().rt(1e19),
                    {{"system[1].avgRt", "must be an integer of at most 9007199254740991"}}}));

// --- merging ---------------------------------------------------------------------------------

TEST(SystemRuleManager, LoadsEveryThresholdOfARule) {
  const auto g = guard({sys().load(1.2).cpu(0.7).rt(50).thread(17).qps(1500)});
  const system_rule m = g->merged();
  EXPECT_EQ(m.highest_system_load, 1.2);
  EXPECT_EQ(m.highest_cpu_usage, 0.7);
  EXPECT_EQ(m.avg_rt, 50);
  EXPECT_EQ(m.max_thread, 17);
  EXPECT_EQ(m.qps, 1500);
}

TEST(SystemRuleManager, SeveralRulesMergeWithTheSmallestThreshold) {
  const auto g = guard({sys().load(2.3), sys().load(1.2), sys().load(3.4).qps(10)});
  EXPECT_EQ(g->merged().highest_system_load, 1.2);
  EXPECT_EQ(g->merged().qps, 10);
  EXPECT_EQ(g->merged().max_thread, -1);
}

TEST(SystemRuleManager, RulesWithEveryThresholdOffCheckNothing) {
  slot_harness h;
  const auto g = guard({{}, {}});
  for (int i = 0; i < 100; ++i) h.record_inbound_pass();
  EXPECT_EQ(outcome(*g, h), pass);
}

TEST(SystemRuleManager, TheBlockNamesTheRuleThatSetTheTrippedThreshold) {
  slot_harness h;
  const auto g = guard({sys().qps(5), sys().thread(0), sys().qps(2)});
  h.record_inbound_pass(2);
  const auto v = g->check(h.check());
  ASSERT_EQ(v.outcome, block);
  EXPECT_EQ(v.block.reason, block_reason::system);
  EXPECT_EQ(v.block.limit, system_limit::qps);
  EXPECT_EQ(v.block.rule_index, 2);
  EXPECT_EQ(v.block.retry_after, std::chrono::seconds(1));
}

// --- each limit in isolation -----------------------------------------------------------------

TEST(SystemGuard, QpsCountsTheAcquireOfTheNewEntry) {
  slot_harness h;
  const auto g = guard({sys().qps(3)});
  h.record_inbound_pass(2);
  EXPECT_EQ(g->check(h.check({}, entry_type::inbound, {}, 1)).outcome, pass);  // 2 + 1 <= 3
  EXPECT_EQ(g->check(h.check({}, entry_type::inbound, {}, 2)).outcome, block);
  h.record_inbound_pass();
  EXPECT_EQ(outcome(*g, h), block);
  h.time.advance_ms(1000);  // the one-second window has moved on
  EXPECT_EQ(outcome(*g, h), pass);
}

TEST(SystemGuard, OutboundEntriesAreNeverChecked) {
  slot_harness h;
  const auto g = guard({sys().qps(0)});
  EXPECT_EQ(outcome(*g, h, entry_type::outbound), pass);
  EXPECT_EQ(outcome(*g, h, entry_type::inbound), block);
}

TEST(SystemGuard, ThreadBlocksOnlyAboveMaxThread) {
  slot_harness h;
  const auto g = guard({sys().thread(2)});
  h.record_inbound_pass(2);
  h.registry.inbound().increase_concurrency();  // 2 in flight
  EXPECT_EQ(outcome(*g, h), pass);
  h.registry.inbound().increase_concurrency();  // 3 in flight
  const auto v = g->check(h.check());
  ASSERT_EQ(v.outcome, block);
  EXPECT_EQ(v.block.limit, system_limit::thread);
}

TEST(SystemGuard, RtBlocksAboveTheAverageResponseTime) {
  slot_harness h;
  const auto g = guard({sys().rt(50)});
  h.record_inbound_pass();
  h.record_inbound_exit(50);
  EXPECT_EQ(outcome(*g, h), pass);
  h.record_inbound_pass();
  h.record_inbound_exit(60);  // average 55
  const auto v = g->check(h.check());
  ASSERT_EQ(v.outcome, block);
  EXPECT_EQ(v.block.limit, system_limit::rt);
}

TEST(SystemGuard, CpuBlocksAboveTheHighestUsage) {
  slot_harness h;
  auto status = std::make_shared<manual_system_status>();
  const auto g = guard({sys().cpu(0)}, status);
  EXPECT_EQ(outcome(*g, h), pass) << "no sample yet";
  status->set_cpu_usage(0.01);
  const auto v = g->check(h.check());
  ASSERT_EQ(v.outcome, block);
  EXPECT_EQ(v.block.limit, system_limit::cpu);
  status->set_cpu_usage(0);
  EXPECT_EQ(outcome(*g, h), pass);
}

TEST(SystemGuard, LoadAndCpuNeverTripWithoutAStatusSource) {
  slot_harness h;
  const auto g = guard({sys().load(0).cpu(0)});
  for (int i = 0; i < 5; ++i) h.record_inbound_pass();
  EXPECT_EQ(outcome(*g, h), pass);
}

// --- BBR -------------------------------------------------------------------------------------

/// 100 requests of 100 ms completed in this bucket: maxSuccessQps 200, minRt 100 → capacity 20.
void complete_hundred_requests_of_100ms(slot_harness& h) {
  for (int i = 0; i < 100; ++i) {
    h.record_inbound_pass();
    h.record_inbound_exit(100);
  }
}

void set_in_flight(slot_harness& h, int n) {
  auto& inbound = h.registry.inbound();
  while (inbound.concurrency() < n) inbound.increase_concurrency();
  while (inbound.concurrency() > n) inbound.decrease_concurrency();
}

TEST(SystemGuardBbr, HighLoadPassesWhileInFlightIsWithinCapacity) {
  slot_harness h;
  auto status = std::make_shared<manual_system_status>();
  status->set_load1(8);
  const auto g = guard({sys().load(4)}, status);
  complete_hundred_requests_of_100ms(h);
  ASSERT_EQ(h.registry.inbound().max_success_qps(h.time.now_ms()), 200);
  ASSERT_EQ(h.registry.inbound().min_rt(h.time.now_ms()), 100);
  set_in_flight(h, 20);
  EXPECT_EQ(outcome(*g, h), pass);
}

TEST(SystemGuardBbr, HighLoadBlocksWhenInFlightExceedsCapacity) {
  slot_harness h;
  auto status = std::make_shared<manual_system_status>();
  status->set_load1(8);
  const auto g = guard({sys().load(4)}, status);
  complete_hundred_requests_of_100ms(h);
  set_in_flight(h, 21);
  const auto v = g->check(h.check());
  ASSERT_EQ(v.outcome, block);
  EXPECT_EQ(v.block.limit, system_limit::load);
}

TEST(SystemGuardBbr, OneRequestInFlightNeverTripsTheLoadLimit) {
  slot_harness h;
  auto status = std::make_shared<manual_system_status>();
  status->set_load1(8);
  const auto g = guard({sys().load(4)}, status);
  h.registry.inbound().add_rt_and_success(h.time.now_ms(), 1, 1);  // capacity 2 × 1 / 1000
  set_in_flight(h, 1);
  EXPECT_EQ(outcome(*g, h), pass);
  set_in_flight(h, 2);
  EXPECT_EQ(outcome(*g, h), block);
}

TEST(SystemGuardBbr, LowLoadPassesWhateverTheConcurrency) {
  slot_harness h;
  auto status = std::make_shared<manual_system_status>();
  status->set_load1(3.9);
  const auto g = guard({sys().load(4)}, status);
  set_in_flight(h, 1000);
  EXPECT_EQ(outcome(*g, h), pass);
}

}  // namespace
}  // namespace floodgate
