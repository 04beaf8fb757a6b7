// (context, resource) pairs past the cap (SPEC §9: a cap that is reached fails safe): an entry
// whose pair has no node of its own is counted on a node its resource keeps for all such pairs,
// and every rule still applies to it.
#include <floodgate/engine/engine.hpp>

#include "node/node_registry.hpp"

#include <gtest/gtest.h>

#include <string>

namespace floodgate {
namespace {

struct ContextPairOverflow : ::testing::Test {
  manual_clock clock;
  engine eng{engine_options{.limits = {.max_default_nodes = 2}, .time = &clock}};

  /// Fills the cap with two contexts of their own on "res".
  void fill_the_cap() {
    for (const char* c : {"ctx-1", "ctx-2"}) {
      context ctx{eng, c};
      auto e = eng.enter(ctx, "res");
      ASSERT_FALSE(e.unchecked());
    }
  }
  int passes(const std::string& context_name, int tries, std::string_view origin = {}) {
    int n = 0;
    for (int i = 0; i < tries; ++i) {
      context ctx{eng, context_name, origin};
      auto e = eng.enter(ctx, "res");
      EXPECT_FALSE(e.unchecked()) << context_name;
      n += e.passed() ? 1 : 0;
    }
    return n;
  }
};

TEST_F(ContextPairOverflow, AQpsRuleStillLimitsContextsPastTheCap) {
  ASSERT_TRUE(eng.load_rules({.flow = {{.resource = "res", .count = 3}}}));
  fill_the_cap();
  EXPECT_EQ(passes("late-1", 2), 1);
  EXPECT_EQ(passes("late-2", 2), 0);
  clock.advance_ms(1000);
  EXPECT_EQ(passes("late-3", 5), 3);
}

TEST_F(ContextPairOverflow, AuthorityStillBlocksAnOriginPastTheCap) {
  ASSERT_TRUE(eng.load_rules({.authority = {{.resource = "res",
                                             .strategy = authority_strategy::black,
                                             .limit_app = "bad"}}}));
  fill_the_cap();
  EXPECT_EQ(passes("late", 2, "bad"), 0);
  EXPECT_EQ(passes("late", 2, "good"), 2);
}

TEST_F(ContextPairOverflow, AChainRuleStillLimitsTheContextItNamesPastTheCap) {
  ASSERT_TRUE(eng.load_rules(
      {.flow = {{.resource = "res", .count = 2, .strategy = flow_strategy::chain,
                 .ref_resource = "late-1"}}}));
  fill_the_cap();
  EXPECT_EQ(passes("late-1", 3), 2);
  EXPECT_EQ(passes("late-2", 2), 2) << "a chain rule on late-1 does not apply to late-2";
}

TEST_F(ContextPairOverflow, PairsPastTheCapShareOneCountedNodeAndTheResourceCountsThem) {
  fill_the_cap();
  EXPECT_EQ(passes("late-1", 2), 2);
  EXPECT_EQ(passes("late-2", 1), 1);
  const auto* cluster = eng.nodes().find_resource("res");
  ASSERT_NE(cluster, nullptr);
  const node::default_node* overflow = cluster->overflow_default();
  ASSERT_NE(overflow, nullptr);
  EXPECT_EQ(overflow->entrance().name(), node::overflow_context_name);
  EXPECT_EQ(overflow->total_pass(clock.now_ms()), 3u);
  EXPECT_EQ(cluster->total_pass(clock.now_ms()), 5u);
  EXPECT_EQ(eng.nodes().overflow().default_nodes.load(), 3u);
}

}  // namespace
}  // namespace floodgate
