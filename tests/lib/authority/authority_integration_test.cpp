// Authority rules through the engine (Sentinel's AuthorityPartialIntegrationTest).
#include <floodgate/engine/engine.hpp>

#include "node/node_registry.hpp"

#include <gtest/gtest.h>

namespace floodgate {
namespace {

struct AuthorityIntegration : ::testing::Test {
  manual_clock clock;
  engine eng{engine_options{.time = &clock}};

  void load(authority_strategy s, std::string list) {
    rule_set rules;
    authority_rule r;
    r.resource = "GET:/admin";
    r.strategy = s;
    r.limit_app = std::move(list);
    rules.authority.push_back(r);
    ASSERT_TRUE(eng.load_rules(rules));
  }

  bool passes(std::string_view origin) {
    context ctx{eng, "http-inbound", origin};
    auto e = eng.enter(ctx, "GET:/admin", {.type = entry_type::inbound});
    return e.passed();
  }
};

TEST_F(AuthorityIntegration, WhiteListAdmitsOnlyListedOrigins) {
  load(authority_strategy::white, "ops, cron");
  EXPECT_TRUE(passes("ops"));
  EXPECT_TRUE(passes("cron"));
  EXPECT_FALSE(passes("billing"));
  EXPECT_TRUE(passes("")) << "an unknown caller is not judged";
}

TEST_F(AuthorityIntegration, BlackListRefusesListedOrigins) {
  load(authority_strategy::black, "crawler");
  EXPECT_FALSE(passes("crawler"));
  EXPECT_TRUE(passes("ops"));
}

TEST_F(AuthorityIntegration, BlockIsCountedWithItsReason) {
  load(authority_strategy::white, "ops");
  context ctx{eng, "http-inbound", "billing"};
  {
    auto e = eng.enter(ctx, "GET:/admin", {.type = entry_type::inbound});
    ASSERT_TRUE(e.blocked());
    EXPECT_EQ(e.block().reason, block_reason::authority);
    EXPECT_EQ(e.block().rule_index, 0);
    EXPECT_EQ(e.block().subject.as_string(), "billing") << "the block carries the origin";
  }
  const auto* node = eng.nodes().find_resource("GET:/admin");
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->totals().blocked[static_cast<std::size_t>(block_reason::authority)].load(), 1u);
}

TEST_F(AuthorityIntegration, OtherResourcesAreNotAffected) {
  load(authority_strategy::white, "ops");
  context ctx{eng, "http-inbound", "billing"};
  auto e = eng.enter(ctx, "GET:/hello", {.type = entry_type::inbound});
  EXPECT_TRUE(e.passed());
}

// An audit of the API: the engine took a second authority rule of one resource (keeping the
// first) that the rule file refuses, so rules() written with to_yaml did not load again.
TEST_F(AuthorityIntegration, ASecondRuleOfOneResourceIsRejectedAsTheFileRejectsIt) {
  load(authority_strategy::white, "ops");
  const rule_set two{.authority = {{.resource = "GET:/admin", .limit_app = "ops"},
                                   {.resource = "GET:/other", .limit_app = "ops"},
                                   {.resource = "GET:/admin", .limit_app = "billing"}}};
  const load_result r = eng.load_rules(two);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].path, "authority[2].resource");
  EXPECT_EQ(r.errors[0].message,
            "a resource has at most one authority rule (first at authority[0])");
  EXPECT_FALSE(passes("billing")) << "the last good rules stay";
  EXPECT_TRUE(passes("ops"));
}

}  // namespace
}  // namespace floodgate
