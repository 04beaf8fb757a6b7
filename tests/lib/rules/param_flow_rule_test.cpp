// Hot-parameter rule validation: every problem, with the path as written in the file.
#include <floodgate/rules/param_flow_rule.hpp>

#include <gtest/gtest.h>

#include <functional>
#include <limits>

namespace floodgate {
namespace {

struct param_case {
  const char* name;
  std::function<void(param_flow_rule&)> change;
  std::vector<rule_error> errors;
};

class ParamFlowRuleValidation : public ::testing::TestWithParam<param_case> {};

TEST_P(ParamFlowRuleValidation, ReportsEveryProblemWithItsPath) {
  param_flow_rule rule;
  rule.resource = "GET:/hello";
  rule.param = param_selector{param_source::header, "X-User"};
  rule.count = 5;
  GetParam().change(rule);
  std::vector<rule_error> errors;
  validate(rule, "paramFlow[0]", errors);
  EXPECT_EQ(errors, GetParam().errors);
}

INSTANTIATE_TEST_SUITE_P(
    Rules, ParamFlowRuleValidation,
    ::testing::Values(
        param_case{"Valid", [](param_flow_rule&) {}, {}},
        param_case{"ValidWithIndex",
                   [](param_flow_rule& r) {
                     r.param.reset();
                     r.param_idx = -1;
                     r.behavior = control_behavior::throttling;
                     r.items = {{"vip", 0}};
                   },
                   {}},
        param_case{"ClientIpNeedsNoName",
                   [](param_flow_rule& r) {
                     r.param = param_selector{param_source::client_ip, ""};
                   },
                   {}},
        param_case{"InfiniteItemCount",
                   [](param_flow_rule& r) {
                     r.items = {{"vip", std::numeric_limits<double>::infinity()}};
                   },
                   {{"paramFlow[0].items[0].count",
                     "must be at most 67108863 (for no limit, leave the rule out)"}}},
        param_case{"FractionalItemCount",  // an Integer in Sentinel, and in the rule file
                   [](param_flow_rule& r) {
                     r.items = {{"vip", 1.5}};
                   },
                   {{"paramFlow[0].items[0].count", "must be an integer"}}},
        param_case{"CountAboveTheLargest",
                   [](param_flow_rule& r) { r.count = 1e20; },
                   {{"paramFlow[0].count",
                     "must be at most 67108863 (for no limit, leave the rule out)"}}},
        param_case{"CountBeyondAValuesTokenWord",
                   [](param_flow_rule& r) { r.count = 67'108'864; },
                   {{"paramFlow[0].count",
                     "must be at most 67108863 (for no limit, leave the rule out)"}}},
        param_case{
            "BurstBeyondAValuesTokenWord",
            [](param_flow_rule& r) {
              r.count = 67'000'000;
              r.burst_count = 200'000;
              r.items = {{"vip", 1}, {"bulk", 67'100'000}};
            },
            {{"paramFlow[0].count", "with burstCount 200000 must be at most 67108863"},
             {"paramFlow[0].items[1].count", "with burstCount 200000 must be at most 67108863"}}},
        param_case{"BurstDoesNotCountForThrottling",
                   [](param_flow_rule& r) {
                     r.count = 67'000'000;
                     r.burst_count = 200'000;
                     r.behavior = control_behavior::throttling;
                   },
                   {}},
        param_case{"EmptyResource",
                   [](param_flow_rule& r) { r.resource.clear(); },
                   {{"paramFlow[0].resource", "must not be empty"}}},
        param_case{"NeitherParamNorIndex",
                   [](param_flow_rule& r) { r.param.reset(); },
                   {{"paramFlow[0]", "one of param or paramIdx is required"}}},
        param_case{"BothParamAndIndex",
                   [](param_flow_rule& r) { r.param_idx = 0; },
                   {{"paramFlow[0].paramIdx", "param and paramIdx are mutually exclusive"}}},
        param_case{"HeaderWithoutName",
                   [](param_flow_rule& r) {
                     r.param = param_selector{param_source::header, ""};
                   },
                   {{"paramFlow[0].param.name", "is required when from is header, query or path"}}},
        param_case{"QueryWithoutName",
                   [](param_flow_rule& r) {
                     r.param = param_selector{param_source::query, ""};
                   },
                   {{"paramFlow[0].param.name", "is required when from is header, query or path"}}},
        param_case{"NegativeNumbers",
                   [](param_flow_rule& r) {
                     r.count = -1;
                     r.burst_count = -1;
                     r.max_queueing_time_ms = -5;
                   },
                   {{"paramFlow[0].count", "must be >= 0"},
                    {"paramFlow[0].burstCount", "must be >= 0"},
                    {"paramFlow[0].maxQueueingTimeMs", "must be >= 0"}}},
        param_case{"ZeroDuration",
                   [](param_flow_rule& r) { r.duration_in_sec = 0; },
                   {{"paramFlow[0].durationInSec", "must be > 0"}}},
        param_case{"WarmUpIsNotABehaviourOfParamRules",
                   [](param_flow_rule& r) { r.behavior = control_behavior::warm_up; },
                   {{"paramFlow[0].controlBehavior", "must be reject or throttling"}}},
        param_case{"NegativeItemCount",
                   [](param_flow_rule& r) {
                     r.items = {{"a", 1}, {"b", -1}};
                   },
                   {{"paramFlow[0].items[1].count", "must be >= 0"}}}),
    [](const ::testing::TestParamInfo<param_case>& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace floodgate
