// Flow rule validation: Sentinel's FlowRuleUtil.isValidRule, reported with SPEC key names.
#include <floodgate/rules/rule_set.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace floodgate {
namespace {

flow_rule valid() {
  flow_rule r;
  r.resource = "GET:/hello";
  r.count = 10;
  return r;
}

struct validation_case {
  std::string name;
  std::function<void(flow_rule&)> change;
  std::vector<rule_error> expected;
};

void PrintTo(const validation_case& c, std::ostream* os) { *os << c.name; }

struct FlowRuleValidation : ::testing::TestWithParam<validation_case> {};

TEST_P(FlowRuleValidation, ReportsEveryProblemWithItsPath) {
  flow_rule r = valid();
  GetParam().change(r);
  std::vector<rule_error> errors;
  validate(r, "flow[1]", errors);
  EXPECT_EQ(errors, GetParam().expected);
}

const validation_case cases[] = {
    {"valid", [](flow_rule&) {}, {}},
    {"empty_resource",
     [](flow_rule& r) { r.resource.clear(); },
     {{"flow[1].resource", "must not be empty"}}},
    {"blank_resource",
     [](flow_rule& r) { r.resource = "  "; },
     {{"flow[1].resource", "must not be empty"}}},
    {"negative_count", [](flow_rule& r) { r.count = -1; }, {{"flow[1].count", "must be >= 0"}}},
    {"nan_count",
     [](flow_rule& r) { r.count = std::nan(""); },
     {{"flow[1].count", "must be >= 0"}}},
    {"count_above_the_largest",
     [](flow_rule& r) { r.count = 1e20; },
     {{"flow[1].count", "must be at most 1e11 (for no limit, leave the rule out)"}}},
    {"infinite_count",
     [](flow_rule& r) { r.count = std::numeric_limits<double>::infinity(); },
     {{"flow[1].count", "must be at most 1e11 (for no limit, leave the rule out)"}}},
    {"largest_count", [](flow_rule& r) { r.count = 1e11; }, {}},
    {"zero_count", [](flow_rule& r) { r.count = 0; }, {}},
    {"relate_without_ref",
     [](flow_rule& r) { r.strategy = flow_strategy::relate; },
     {{"flow[1].refResource", "is required when strategy is relate"}}},
    {"chain_without_ref",
     [](flow_rule& r) { r.strategy = flow_strategy::chain; },
     {{"flow[1].refResource", "is required when strategy is chain"}}},
    {"chain_with_ref",
     [](flow_rule& r) {
       r.strategy = flow_strategy::chain;
       r.ref_resource = "http-inbound";
     },
     {}},
    {"warm_up_without_period",
     [](flow_rule& r) {
       r.behavior = control_behavior::warm_up;
       r.warm_up_period_sec = 0;
     },
     {{"flow[1].warmUpPeriodSec", "must be > 0"}}},
    {"throttling_without_queue",
     [](flow_rule& r) {
       r.behavior = control_behavior::throttling;
       r.max_queueing_time_ms = 0;
     },
     {{"flow[1].maxQueueingTimeMs", "must be > 0 for throttling"}}},
    {"warm_up_throttling_needs_both",
     [](flow_rule& r) {
       r.behavior = control_behavior::warm_up_throttling;
       r.warm_up_period_sec = -1;
       r.max_queueing_time_ms = -1;
     },
     {{"flow[1].warmUpPeriodSec", "must be > 0"}, {"flow[1].maxQueueingTimeMs", "must be >= 0"}}},
    {"reject_ignores_period_and_queue",
     [](flow_rule& r) {
       r.warm_up_period_sec = 0;
       r.max_queueing_time_ms = 0;
     },
     {}},
    {"concurrency_with_warm_up",
     [](flow_rule& r) {
       r.grade = flow_grade::concurrency;
       r.behavior = control_behavior::warm_up;
     },
     {{"flow[1].controlBehavior", "must be reject for concurrency rules"}}},
    {"concurrency_with_reject", [](flow_rule& r) { r.grade = flow_grade::concurrency; }, {}},
    {"every_problem_at_once",
     [](flow_rule& r) {
       r.resource.clear();
       r.count = -2;
       r.strategy = flow_strategy::relate;
     },
     {{"flow[1].resource", "must not be empty"},
      {"flow[1].count", "must be >= 0"},
      {"flow[1].refResource", "is required when strategy is relate"}}},
};

INSTANTIATE_TEST_SUITE_P(Sentinel, FlowRuleValidation, ::testing::ValuesIn(cases),
                         [](const ::testing::TestParamInfo<validation_case>& c) {
                           return c.param.name;
                         });

TEST(FlowRuleValidation, RuleSetPathsNameTheRulesPosition) {
  rule_set rules;
  rules.flow = {valid(), valid()};
  rules.flow[1].count = -1;
  std::vector<rule_error> errors;
  validate(rules, errors);
  EXPECT_EQ(errors, (std::vector<rule_error>{{"flow[1].count", "must be >= 0"}}));
}

}  // namespace
}  // namespace floodgate
