// Flow rules through the engine (Sentinel's FlowPartialIntegrationTest).
#include <floodgate/engine/engine.hpp>

#include <gtest/gtest.h>

#include <string>

namespace floodgate {
namespace {

flow_rule qps(std::string resource, double count, std::string limit_app = "default") {
  flow_rule r;
  r.resource = std::move(resource);
  r.count = count;
  r.limit_app = std::move(limit_app);
  return r;
}

struct FlowPartialIntegration : ::testing::Test {
  manual_clock clock;
  engine eng{engine_options{.time = &clock}};

  void load(std::vector<flow_rule> flow) {
    rule_set rules;
    rules.flow = std::move(flow);
    ASSERT_TRUE(eng.load_rules(rules).ok());
  }
};

TEST_F(FlowPartialIntegration, QpsCountOneBlocksTheSecondEntry) {
  load({qps("res", 1)});
  context ctx{eng, "ctx"};
  {
    auto e = eng.enter(ctx, "res");
    EXPECT_TRUE(e);
  }
  auto e = eng.enter(ctx, "res");
  ASSERT_TRUE(e.blocked());
  EXPECT_EQ(e.block().reason, block_reason::flow);
  EXPECT_EQ(e.block().rule_index, 0);
}

TEST_F(FlowPartialIntegration, ConcurrencyCountOneBlocksASecondConcurrentEntry) {
  flow_rule r = qps("res", 1);
  r.grade = flow_grade::concurrency;
  load({r});
  context a{eng, "ctx"};
  context b{eng, "ctx"};
  auto first = eng.enter(a, "res");
  ASSERT_TRUE(first);
  EXPECT_TRUE(eng.enter(b, "res").blocked());
  first.exit();
  EXPECT_TRUE(eng.enter(b, "res"));
}

TEST_F(FlowPartialIntegration, EachResourceHasItsOwnCounter) {
  load({qps("res_1", 1), qps("res_2", 1)});
  context ctx{eng, "ctx"};
  EXPECT_TRUE(eng.enter(ctx, "res_1"));
  EXPECT_TRUE(eng.enter(ctx, "res_2"));
  EXPECT_TRUE(eng.enter(ctx, "res_1").blocked());
  EXPECT_TRUE(eng.enter(ctx, "res_2").blocked());
}

TEST_F(FlowPartialIntegration, OtherRuleLimitsOriginsNoRuleNames) {
  load({qps("res", 0, "other"), qps("res", 1, "app2")});
  context app1{eng, "ctx", "app1"};
  context app2{eng, "ctx", "app2"};
  EXPECT_TRUE(eng.enter(app1, "res").blocked());
  EXPECT_TRUE(eng.enter(app2, "res"));
}

TEST_F(FlowPartialIntegration, LoneOtherRuleDoesNotApplyToAnEmptyOrigin) {
  load({qps("res", 0, "other")});
  context ctx{eng, "ctx"};
  EXPECT_TRUE(eng.enter(ctx, "res"));
}

TEST_F(FlowPartialIntegration, ChainRuleAppliesOnlyInItsContext) {
  flow_rule r = qps("entry2", 0);
  r.strategy = flow_strategy::chain;
  r.ref_resource = "entry1";
  load({r});
  context in_chain{eng, "entry1"};
  EXPECT_TRUE(eng.enter(in_chain, "entry2").blocked());
  context elsewhere{eng, "entry3"};
  EXPECT_TRUE(eng.enter(elsewhere, "entry2"));
}

TEST_F(FlowPartialIntegration, RelateRuleBlocksWhenTheRelatedResourceIsBusy) {
  flow_rule r = qps("read", 2);
  r.strategy = flow_strategy::relate;
  r.ref_resource = "write";
  load({r});
  context ctx{eng, "ctx"};
  EXPECT_TRUE(eng.enter(ctx, "read"));  // "write" never entered: the rule does not apply
  EXPECT_TRUE(eng.enter(ctx, "write"));
  EXPECT_TRUE(eng.enter(ctx, "read"));
  EXPECT_TRUE(eng.enter(ctx, "write"));
  EXPECT_TRUE(eng.enter(ctx, "read").blocked());
}

}  // namespace
}  // namespace floodgate
