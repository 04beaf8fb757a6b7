// A resource's breakers across reloads: Sentinel's DegradeRuleManagerTest reuse case, and what a
// reload through the engine keeps.
#include "degrade/degrade_slot.hpp"

#include "lib/degrade/degrade_test_support.hpp"

#include <gtest/gtest.h>

namespace floodgate {
namespace {

using test_support::degrade_engine;
using test_support::degrade_rule_of;
using enum breaker_state;

degrade_rule rule_a() { return degrade_rule_of("res", degrade_grade::error_count, 0, 1, 1'000, 10); }
degrade_rule rule_b() { return degrade_rule_of("res", degrade_grade::error_ratio, 0.5, 5, 1'000, 10); }

std::vector<std::pair<const circuit_breaker*, std::int32_t>> list(const resource_breakers& rb) {
  std::vector<std::pair<const circuit_breaker*, std::int32_t>> out;
  rb.for_each([&](const circuit_breaker& b, std::int32_t index) { out.emplace_back(&b, index); });
  return out;
}

TEST(DegradeRuleManager, AnEqualRuleKeepsTheSameBreakerObject) {
  breaker_observers observers;
  const auto first = resource_breakers::build({{rule_a(), 0}}, nullptr, observers);
  const auto second = resource_breakers::build({{rule_a(), 0}}, first.get(), observers);
  ASSERT_EQ(list(*second).size(), 1u);
  EXPECT_EQ(list(*second)[0].first, list(*first)[0].first);
}

TEST(DegradeRuleManager, AChangedRuleGetsANewBreaker) {
  breaker_observers observers;
  const auto first = resource_breakers::build({{rule_a(), 0}}, nullptr, observers);
  degrade_rule changed = rule_a();
  changed.time_window_sec = 11;
  const auto second = resource_breakers::build({{changed, 0}}, first.get(), observers);
  EXPECT_NE(list(*second)[0].first, list(*first)[0].first);
  EXPECT_EQ(list(*second)[0].first->rule(), changed);
}

TEST(DegradeRuleManager, AReusedBreakerReportsItsNewRuleIndex) {
  breaker_observers observers;
  const auto first = resource_breakers::build({{rule_a(), 0}, {rule_b(), 1}}, nullptr, observers);
  const auto second =
      resource_breakers::build({{rule_b(), 3}, {rule_a(), 4}}, first.get(), observers);
  const auto before = list(*first);
  const auto after = list(*second);
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(after[0], std::make_pair(before[1].first, 3));
  EXPECT_EQ(after[1], std::make_pair(before[0].first, 4));
}

TEST(DegradeRuleManager, TwoEqualRulesKeepTwoBreakers) {
  breaker_observers observers;
  const auto first = resource_breakers::build({{rule_a(), 0}, {rule_a(), 1}}, nullptr, observers);
  const auto second =
      resource_breakers::build({{rule_a(), 0}, {rule_a(), 1}}, first.get(), observers);
  const auto before = list(*first);
  const auto after = list(*second);
  EXPECT_NE(after[0].first, after[1].first);
  EXPECT_EQ(after[0].first, before[0].first);
  EXPECT_EQ(after[1].first, before[1].first);
}

TEST(DegradeRuleManager, AReloadKeepsTheStateOfUnchangedBreakersOnly) {
  degrade_engine h;
  const degrade_rule kept = degrade_rule_of("kept", degrade_grade::error_count, 0, 1, 1'000, 10);
  const degrade_rule changed = degrade_rule_of("changed", degrade_grade::error_count, 0, 1, 1'000, 10);
  ASSERT_TRUE(h.eng.load_rules({.degrade = {kept, changed}}));
  EXPECT_TRUE(h.enter_exit_after("kept", 5, true));
  EXPECT_TRUE(h.enter_exit_after("changed", 5, true));
  const circuit_breaker* kept_before = h.breakers("kept").at(0);
  const std::int64_t retry_at = kept_before->next_retry_ms();

  degrade_rule changed_now = changed;
  changed_now.count = 3;
  ASSERT_TRUE(h.eng.load_rules({.flow = {{.resource = "kept", .count = 100}},
                                .degrade = {changed_now, kept}}));

  EXPECT_EQ(h.breakers("kept").at(0), kept_before);
  EXPECT_EQ(h.state("kept"), open);
  EXPECT_EQ(h.breakers("kept").at(0)->next_retry_ms(), retry_at);
  EXPECT_FALSE(h.enter_exit_after("kept", 5));
  EXPECT_EQ(h.last_block.rule_index, 1);
  EXPECT_EQ(h.state("changed"), closed);
  EXPECT_TRUE(h.enter_exit_after("changed", 5, true));
}

}  // namespace
}  // namespace floodgate
