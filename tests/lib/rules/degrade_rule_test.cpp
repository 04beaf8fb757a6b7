// Degrade-rule validation: Sentinel's DegradeRuleManagerTest validity table, with field paths.
#include <floodgate/engine/engine.hpp>
#include <floodgate/rules/degrade_rule.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace floodgate {
namespace {

degrade_rule valid_rule(degrade_grade grade) {
  degrade_rule r;
  r.resource = "abc";
  r.grade = grade;
  if (grade == degrade_grade::adaptive) {
    r.stat_interval_ms = adaptive_default_stat_interval_ms;
    return r;  // no count, no time window
  }
  r.count = grade == degrade_grade::error_ratio ? 0.5 : 10;
  r.time_window_sec = 10;
  return r;
}

struct validity_case {
  const char* name;
  degrade_rule rule;
  std::vector<rule_error> errors;  ///< empty: valid
};

void PrintTo(const validity_case& c, std::ostream* os) { *os << c.name; }

degrade_rule with(degrade_grade grade, void (*change)(degrade_rule&)) {
  degrade_rule r = valid_rule(grade);
  change(r);
  return r;
}

using enum degrade_grade;

const validity_case validity_cases[] = {
    {"SlowRatioDefaultsAreValid", valid_rule(slow_request_ratio), {}},
    {"ErrorRatioIsValid", valid_rule(error_ratio), {}},
    {"ErrorCountIsValid", valid_rule(error_count), {}},
    {"TimeWindowZeroIsInvalid",
     with(error_count, [](degrade_rule& r) { r.time_window_sec = 0; }),
     {{"degrade[0].timeWindow", "must be > 0"}}},
    {"NegativeTimeWindowIsInvalid",
     with(error_count, [](degrade_rule& r) { r.time_window_sec = -1; }),
     {{"degrade[0].timeWindow", "must be > 0"}}},
    {"RatioAboveOneIsInvalid", with(error_ratio, [](degrade_rule& r) { r.count = 1.1; }),
     {{"degrade[0].count", "must be between 0 and 1 for error_ratio"}}},
    {"RatioOfOneIsValid", with(error_ratio, [](degrade_rule& r) { r.count = 1.0; }), {}},
    {"RatioOfZeroIsValid", with(error_ratio, [](degrade_rule& r) { r.count = 0.0; }), {}},
    {"ErrorCountAboveOneIsValid", with(error_count, [](degrade_rule& r) { r.count = 1.1; }), {}},
    {"NegativeRatioIsInvalid", with(error_ratio, [](degrade_rule& r) { r.count = -0.1; }),
     {{"degrade[0].count", "must be between 0 and 1 for error_ratio"}}},
    {"NegativeCountIsInvalid", with(slow_request_ratio, [](degrade_rule& r) { r.count = -3; }),
     {{"degrade[0].count", "must be >= 0"}}},
    {"NaNCountIsInvalid",
     with(error_count, [](degrade_rule& r) { r.count = std::numeric_limits<double>::quiet_NaN(); }),
     {{"degrade[0].count", "must be a finite number"}}},
    {"SlowRatioThresholdAboveOneIsInvalid",
     with(slow_request_ratio, [](degrade_rule& r) { r.slow_ratio_threshold = 15; }),
     {{"degrade[0].slowRatioThreshold", "must be between 0 and 1"}}},
    {"NegativeSlowRatioThresholdIsInvalid",
     with(slow_request_ratio, [](degrade_rule& r) { r.slow_ratio_threshold = -0.1; }),
     {{"degrade[0].slowRatioThreshold", "must be between 0 and 1"}}},
    {"SlowRatioThresholdIsIgnoredForErrorRatio",
     with(error_ratio, [](degrade_rule& r) { r.slow_ratio_threshold = 15; }), {}},
    {"MinRequestAmountZeroIsInvalid",
     with(error_ratio, [](degrade_rule& r) { r.min_request_amount = 0; }),
     {{"degrade[0].minRequestAmount", "must be > 0"}}},
    {"StatIntervalZeroIsInvalid",
     with(error_ratio, [](degrade_rule& r) { r.stat_interval_ms = 0; }),
     {{"degrade[0].statIntervalMs", "must be > 0"}}},
    {"EmptyResourceIsInvalid", with(error_ratio, [](degrade_rule& r) { r.resource.clear(); }),
     {{"degrade[0].resource", "must not be empty"}}},
    {"UnknownGradeIsInvalid",
     with(error_count, [](degrade_rule& r) { r.grade = static_cast<degrade_grade>(7); }),
     {{"degrade[0].grade", "must be slow_request_ratio, error_ratio, error_count or adaptive"}}},
    {"AdaptiveDefaultsAreValid", valid_rule(adaptive), {}},
    {"AdaptiveKJustAboveOneIsValid", with(adaptive, [](degrade_rule& r) { r.k = 1.0001; }), {}},
    {"AdaptiveKOfOneIsInvalid", with(adaptive, [](degrade_rule& r) { r.k = 1; }),
     {{"degrade[0].k", "must be a finite number > 1"}}},
    {"AdaptiveNaNKIsInvalid",
     with(adaptive, [](degrade_rule& r) { r.k = std::numeric_limits<double>::quiet_NaN(); }),
     {{"degrade[0].k", "must be a finite number > 1"}}},
    {"AdaptiveInfiniteKIsInvalid",
     with(adaptive, [](degrade_rule& r) { r.k = std::numeric_limits<double>::infinity(); }),
     {{"degrade[0].k", "must be a finite number > 1"}}},
    {"AdaptiveZeroStatIntervalIsInvalid",
     with(adaptive, [](degrade_rule& r) { r.stat_interval_ms = 0; }),
     {{"degrade[0].statIntervalMs", "must be > 0"}}},
    {"AdaptiveZeroMinRequestAmountIsInvalid",
     with(adaptive, [](degrade_rule& r) { r.min_request_amount = 0; }),
     {{"degrade[0].minRequestAmount", "must be > 0"}}},
    {"AdaptiveReportsEveryFieldOfTheBinaryGrades",
     with(adaptive,
          [](degrade_rule& r) {
            r.count = 0.5;
            r.slow_ratio_threshold = 0.5;
            r.time_window_sec = 10;
          }),
     {{"degrade[0].count", "does not apply to grade adaptive"},
      {"degrade[0].slowRatioThreshold", "does not apply to grade adaptive"},
      {"degrade[0].timeWindow", "does not apply to grade adaptive"}}},
    {"KOnABinaryGradeIsInvalid", with(error_count, [](degrade_rule& r) { r.k = 3; }),
     {{"degrade[0].k", "applies to grade adaptive only"}}},
    {"EveryProblemIsReported",
     with(error_ratio,
          [](degrade_rule& r) {
            r.count = 2;
            r.time_window_sec = 0;
            r.stat_interval_ms = -5;
          }),
     {{"degrade[0].count", "must be between 0 and 1 for error_ratio"},
      {"degrade[0].statIntervalMs", "must be > 0"},
      {"degrade[0].timeWindow", "must be > 0"}}},
};

class DegradeRuleValidity : public testing::TestWithParam<validity_case> {};

TEST_P(DegradeRuleValidity, ReportsExactlyTheBadFields) {
  std::vector<rule_error> errors;
  validate(GetParam().rule, "degrade[0]", errors);
  EXPECT_EQ(errors, GetParam().errors);
}

INSTANTIATE_TEST_SUITE_P(DegradeRuleManager, DegradeRuleValidity,
                         testing::ValuesIn(validity_cases),
                         [](const auto& test) { return std::string(test.param.name); });

TEST(DegradeRuleManager, EngineRejectsAnInvalidRuleWithItsPathAndKeepsTheOldRules) {
  manual_clock clock;
  engine eng{engine_options{.time = &clock}};
  ASSERT_TRUE(eng.load_rules({.degrade = {valid_rule(error_count)}}));

  degrade_rule bad = valid_rule(error_count);
  bad.time_window_sec = 0;
  const load_result result = eng.load_rules({.degrade = {valid_rule(error_count), bad}});

  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.errors, (std::vector<rule_error>{{"degrade[1].timeWindow", "must be > 0"}}));
  EXPECT_EQ(eng.rules().degrade.size(), 1u);
}

}  // namespace
}  // namespace floodgate
