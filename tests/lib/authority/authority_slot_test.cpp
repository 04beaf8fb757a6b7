// Authority rules: validation and Sentinel's AuthorityRuleChecker cases.
#include "authority/authority_slot.hpp"

#include "lib/support/slot_harness.hpp"

#include <gtest/gtest.h>

namespace floodgate {
namespace {

authority_rule rule(std::string resource, authority_strategy s, std::string list) {
  authority_rule r;
  r.resource = std::move(resource);
  r.strategy = s;
  r.limit_app = std::move(list);
  return r;
}

std::unique_ptr<resource_authority> make(authority_strategy s, std::string list,
                                         std::int32_t index = 0) {
  return resource_authority::build({{rule("res", s, std::move(list)), index}});
}

bool passes(const resource_authority& a, std::string_view origin) {
  test_support::slot_harness h;
  return a.check(h.check(origin)).outcome == slot_verdict::kind::pass;
}

// Sentinel's AuthorityRuleCheckerTest, origin appA.
TEST(AuthorityRuleChecker, WhiteListContainingTheOriginPasses) {
  EXPECT_TRUE(passes(*make(authority_strategy::white, "appA,appB"), "appA"));
}

TEST(AuthorityRuleChecker, WhiteListWithoutTheOriginBlocks) {
  EXPECT_FALSE(passes(*make(authority_strategy::white, "appB"), "appA"));
}

TEST(AuthorityRuleChecker, BlackListContainingTheOriginBlocks) {
  EXPECT_FALSE(passes(*make(authority_strategy::black, "appA"), "appA"));
}

TEST(AuthorityRuleChecker, BlackListWithoutTheOriginPasses) {
  EXPECT_TRUE(passes(*make(authority_strategy::black, "appC"), "appA"));
}

TEST(AuthorityRuleChecker, EmptyOriginPassesAWhiteList) {
  EXPECT_TRUE(passes(*make(authority_strategy::white, "appB"), ""));
}

TEST(AuthorityRuleChecker, ListEntriesAreTrimmed) {
  const auto a = make(authority_strategy::white, " ops , cron ");
  EXPECT_TRUE(passes(*a, "ops"));
  EXPECT_TRUE(passes(*a, "cron"));
  EXPECT_FALSE(passes(*a, " ops"));
}

TEST(AuthorityRuleChecker, OriginsMatchExactlyNotByPrefix) {
  const auto a = make(authority_strategy::black, "app");
  EXPECT_TRUE(passes(*a, "appA"));
  EXPECT_TRUE(passes(*a, "ap"));
  EXPECT_FALSE(passes(*a, "app"));
}

TEST(AuthorityRuleChecker, BlockCarriesReasonAndRuleIndex) {
  test_support::slot_harness h;
  const auto a = make(authority_strategy::white, "ops", 3);
  const auto v = a->check(h.check("billing"));
  ASSERT_EQ(v.outcome, slot_verdict::kind::block);
  EXPECT_EQ(v.block.reason, block_reason::authority);
  EXPECT_EQ(v.block.rule_index, 3);
}

TEST(AuthorityRuleChecker, OnlyTheFirstRuleOfAResourceApplies) {
  const auto a = resource_authority::build({{rule("res", authority_strategy::white, "a"), 0},
                                            {rule("res", authority_strategy::black, "a"), 1}});
  EXPECT_TRUE(passes(*a, "a"));
  EXPECT_FALSE(passes(*a, "b"));
}

TEST(AuthorityRuleChecker, NoRulesPass) {
  EXPECT_TRUE(passes(*resource_authority::build({}), "anyone"));
}

struct authority_case {
  authority_rule rule;
  std::vector<rule_error> errors;
};

class AuthorityRuleValidation : public ::testing::TestWithParam<authority_case> {};

TEST_P(AuthorityRuleValidation, ReportsEveryProblemWithItsPath) {
  std::vector<rule_error> errors;
  validate(GetParam().rule, "authority[2]", errors);
  EXPECT_EQ(errors, GetParam().errors);
}

INSTANTIATE_TEST_SUITE_P(
    Rules, AuthorityRuleValidation,
    ::testing::Values(authority_case{rule("r", authority_strategy::white, "a,b"), {}},
                      authority_case{rule("", authority_strategy::white, "a"),
                                     {{"authority[2].resource", "must not be empty"}}},
                      authority_case{rule("r", authority_strategy::white, ""),
                                     {{"authority[2].limitApp", "must not be empty"}}},
                      authority_case{rule("r", authority_strategy::white, " , "),
                                     {{"authority[2].limitApp", "must name at least one origin"}}},
                      authority_case{rule("", authority_strategy::white, "  "),
                                     {{"authority[2].resource", "must not be empty"},
                                      {"authority[2].limitApp", "must not be empty"}}},
                      authority_case{rule("r", static_cast<authority_strategy>(9), "a"),
                                     {{"authority[2].strategy", "must be white or black"}}}));

}  // namespace
}  // namespace floodgate
