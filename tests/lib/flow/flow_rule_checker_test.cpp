// Node selection for flow rules (Sentinel's FlowRuleCheckerTest).
#include "flow/flow_rule_checker.hpp"

#include "lib/support/slot_harness.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace floodgate::flow {
namespace {

using test_support::slot_harness;

struct FlowRuleChecker : ::testing::Test {
  slot_harness h;
  std::vector<std::string> named;

  selected_node select(const flow_rule& r, std::string_view origin,
                       std::string_view context_name = "ctx") {
    node::origin_node* on = origin.empty() ? nullptr : h.registry.origin(h.cluster, origin);
    named.clear();
    named.push_back(r.limit_app);
    return select_node(r, classify_limit_app(r.limit_app), h.check_in(origin, context_name, on),
                       named);
  }
};

flow_rule rule(std::string limit_app, flow_strategy strategy = flow_strategy::direct,
               std::string ref = {}) {
  flow_rule r;
  r.resource = "res";
  r.count = 1;
  r.limit_app = std::move(limit_app);
  r.strategy = strategy;
  r.ref_resource = std::move(ref);
  return r;
}

TEST_F(FlowRuleChecker, DefaultLimitAppSelectsTheClusterNode) {
  const auto n = select(rule("default"), "appA");
  EXPECT_EQ(n.stats, &h.cluster);
  EXPECT_TRUE(n.exclusive);
}

TEST_F(FlowRuleChecker, EmptyLimitAppMeansDefault) {
  EXPECT_EQ(classify_limit_app(""), limit_app_kind::all);
  EXPECT_EQ(select(rule(""), "").stats, &h.cluster);
}

TEST_F(FlowRuleChecker, LimitAppEqualToTheOriginSelectsTheOriginNode) {
  const auto n = select(rule("appA"), "appA");
  EXPECT_EQ(n.stats, h.registry.origin(h.cluster, "appA"));
  EXPECT_NE(n.stats, nullptr);
  EXPECT_TRUE(n.exclusive);
}

TEST_F(FlowRuleChecker, LimitAppOfAnotherOriginDoesNotApply) {
  EXPECT_FALSE(select(rule("appB"), "appA"));
  EXPECT_FALSE(select(rule("abc"), "def"));
}

TEST_F(FlowRuleChecker, OtherAppliesOnlyToOriginsNoRuleNames) {
  const flow_rule other = rule("other");
  named = {"appA", "other"};
  auto* app_b = h.registry.origin(h.cluster, "appB");
  const auto for_b =
      select_node(other, limit_app_kind::other, h.check_in("appB", "ctx", app_b), named);
  EXPECT_EQ(for_b.stats, app_b);
  EXPECT_FALSE(for_b.exclusive);  // the origin node differs per caller: read, not booked
  auto* app_a = h.registry.origin(h.cluster, "appA");
  EXPECT_FALSE(select_node(other, limit_app_kind::other, h.check_in("appA", "ctx", app_a), named));
  EXPECT_FALSE(select_node(other, limit_app_kind::other, h.check_in("", "ctx", nullptr), named));
}

TEST_F(FlowRuleChecker, IsOtherOriginNeedsANonEmptyUnnamedOrigin) {
  const std::vector<std::string> names = {"appA", "default"};
  EXPECT_TRUE(is_other_origin("appB", names));
  EXPECT_FALSE(is_other_origin("appA", names));
  EXPECT_FALSE(is_other_origin("default", names));
  EXPECT_FALSE(is_other_origin("", names));
}

TEST_F(FlowRuleChecker, ChainWithoutRefResourceDoesNotApply) {
  EXPECT_FALSE(select(rule("default", flow_strategy::chain), "appA"));
}

TEST_F(FlowRuleChecker, RelateSelectsTheReferencedResourcesClusterNode) {
  auto* ref = h.registry.resource("ref");
  const auto n = select(rule("default", flow_strategy::relate, "ref"), "");
  EXPECT_EQ(n.stats, ref);
  EXPECT_FALSE(n.exclusive);
  EXPECT_EQ(n.writable, nullptr);  // another resource's node is read, never booked into
}

TEST_F(FlowRuleChecker, RelateToAResourceNeverEnteredDoesNotApply) {
  EXPECT_FALSE(select(rule("default", flow_strategy::relate, "never"), ""));
}

TEST_F(FlowRuleChecker, ChainSelectsThisContextsDefaultNode) {
  const auto n = select(rule("default", flow_strategy::chain, "ctx"), "");
  EXPECT_EQ(n.stats, &h.node);
  EXPECT_EQ(n.chain, &h.node);
  EXPECT_TRUE(n.exclusive);
  EXPECT_FALSE(select(rule("default", flow_strategy::chain, "other-ctx"), ""));
}

TEST_F(FlowRuleChecker, ChainForOneOriginReadsTheSharedDefaultNode) {
  const auto n = select(rule("appA", flow_strategy::chain, "ctx"), "appA");
  EXPECT_EQ(n.stats, &h.node);
  EXPECT_FALSE(n.exclusive);  // the default node also counts other origins
}

}  // namespace
}  // namespace floodgate::flow
