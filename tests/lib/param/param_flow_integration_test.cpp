// Hot-parameter rules through the engine: arguments at entry, per-value concurrency released at
// exit, throttling waits, and state carried over reloads.
#include <floodgate/engine/engine.hpp>

#include <gtest/gtest.h>

#include <array>

namespace floodgate {
namespace {

param_flow_rule rule_on_first_arg(double count) {
  param_flow_rule r;
  r.resource = "GET:/users/{id}";
  r.param_idx = 0;
  r.count = count;
  return r;
}

struct ParamFlowIntegration : ::testing::Test {
  manual_clock clock;
  engine eng{engine_options{.time = &clock}};
  context ctx{eng, "http-inbound"};

  void load(std::vector<param_flow_rule> rules) {
    rule_set set;
    set.param_flow = std::move(rules);
    ASSERT_TRUE(eng.load_rules(set));
  }
  entry enter(context& c, param_value user) {
    const std::array<param_value, 1> args{user};
    return eng.enter(c, "GET:/users/{id}", {.type = entry_type::inbound, .args = args});
  }
  entry enter(param_value user) { return enter(ctx, user); }
};

TEST_F(ParamFlowIntegration, EachValueGetsCountPerSecond) {
  load({rule_on_first_arg(2)});
  EXPECT_TRUE(enter("alice").passed());
  EXPECT_TRUE(enter("alice").passed());
  auto e = enter("alice");
  ASSERT_TRUE(e.blocked());
  EXPECT_EQ(e.block().reason, block_reason::param_flow);
  EXPECT_EQ(e.block().rule_index, 0);
  EXPECT_GT(e.block().retry_after.count(), 0);
  EXPECT_EQ(e.block().subject.as_string(), "alice") << "the block carries the value";
  EXPECT_TRUE(enter("bob").passed());
  EXPECT_TRUE(enter(std::int64_t{42}).passed());
  clock.advance_ms(1001);
  EXPECT_TRUE(enter("alice").passed());
}

TEST_F(ParamFlowIntegration, EntriesWithoutTheArgumentAreNotLimited) {
  load({rule_on_first_arg(0)});
  for (int i = 0; i < 3; ++i) {
    auto e = eng.enter(ctx, "GET:/users/{id}", {.type = entry_type::inbound});
    EXPECT_TRUE(e.passed());
  }
}

TEST_F(ParamFlowIntegration, ConcurrencyIsReleasedWhenTheEntryExits) {
  auto rule = rule_on_first_arg(1);
  rule.grade = flow_grade::concurrency;
  load({rule});
  context other{eng, "http-inbound"};
  auto first = enter("alice");
  ASSERT_TRUE(first.passed());
  EXPECT_TRUE(enter(other, "alice").blocked());
  EXPECT_TRUE(enter(other, "bob").passed());
  first.exit();
  EXPECT_TRUE(enter(other, "alice").passed());
}

TEST_F(ParamFlowIntegration, ThrottlingReturnsTheWaitOnTheEntry) {
  auto rule = rule_on_first_arg(10);
  rule.behavior = control_behavior::throttling;
  rule.max_queueing_time_ms = 250;
  load({rule});
  EXPECT_EQ(enter("alice").wait(), std::chrono::nanoseconds(0));
  EXPECT_EQ(enter("alice").wait(), std::chrono::milliseconds(100));
  EXPECT_EQ(enter("alice").wait(), std::chrono::milliseconds(200));
  EXPECT_TRUE(enter("alice").blocked());
}

TEST_F(ParamFlowIntegration, AReloadKeepsTheStateOfUnchangedRules) {
  load({rule_on_first_arg(1)});
  ASSERT_TRUE(enter("alice").passed());
  rule_set set;
  set.param_flow = {rule_on_first_arg(1)};
  flow_rule unrelated;
  unrelated.resource = "GET:/other";
  unrelated.count = 5;
  set.flow.push_back(unrelated);
  ASSERT_TRUE(eng.load_rules(set));
  EXPECT_TRUE(enter("alice").blocked()) << "the value's bucket survived the reload";
  load({rule_on_first_arg(2)});
  EXPECT_TRUE(enter("alice").passed()) << "a changed rule starts fresh";
}

TEST_F(ParamFlowIntegration, InvalidRulesAreRejectedWithTheirPaths) {
  auto bad = rule_on_first_arg(-1);
  bad.items = {{"vip", -2}};
  bad.duration_in_sec = 0;
  rule_set set;
  set.param_flow = {rule_on_first_arg(1), bad};
  const auto result = eng.load_rules(set);
  ASSERT_FALSE(result);
  const std::vector<rule_error> expected = {{"paramFlow[1].count", "must be >= 0"},
                                            {"paramFlow[1].durationInSec", "must be > 0"},
                                            {"paramFlow[1].items[0].count", "must be >= 0"}};
  EXPECT_EQ(result.errors, expected);
}

}  // namespace
}  // namespace floodgate
