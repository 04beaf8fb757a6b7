// Origins past the cap of (resource, origin) pairs (SPEC §9: a cap that is reached fails safe:
// origins beyond it share one node per resource whose limits still apply; hashes of
// caller-chosen strings are seeded).
#include <floodgate/engine/engine.hpp>

#include "node/node_registry.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace floodgate {
namespace {

struct OriginOverflow : ::testing::Test {
  manual_clock clock;
  // Both caps at 2: these tests are about the cap of all pairs.
  engine eng{engine_options{.limits = {.max_origin_nodes = 2, .max_origins_per_resource = 2},
                            .time = &clock}};

  /// Fills the cap with two origins of their own.
  void fill_the_cap() {
    for (const char* o : {"first", "second"}) {
      context ctx{eng, "ctx", o};
      auto e = eng.enter(ctx, "res");
      ASSERT_TRUE(e);
    }
  }
  int passes(std::string_view origin, int tries) {
    int n = 0;
    for (int i = 0; i < tries; ++i) {
      context ctx{eng, "ctx", origin};
      n += eng.enter(ctx, "res").passed() ? 1 : 0;
    }
    return n;
  }
};

TEST_F(OriginOverflow, AnOtherRuleLimitsOriginsThatCameAfterTheCap) {
  ASSERT_TRUE(eng.load_rules({.flow = {{.resource = "res", .count = 5, .limit_app = "other"}}}));
  fill_the_cap();
  EXPECT_EQ(passes("late", 10), 5);
}

TEST_F(OriginOverflow, OriginsPastTheCapShareOneLimit) {
  ASSERT_TRUE(eng.load_rules({.flow = {{.resource = "res", .count = 5, .limit_app = "other"}}}));
  fill_the_cap();
  EXPECT_EQ(passes("late-1", 3), 3);
  EXPECT_EQ(passes("late-2", 3), 2) << "the overflow node already counted late-1's passes";
}

TEST_F(OriginOverflow, ARuleNamingAnOriginLimitsItAfterTheCap) {
  ASSERT_TRUE(eng.load_rules({.flow = {{.resource = "res", .count = 3, .limit_app = "late"}}}));
  fill_the_cap();
  EXPECT_EQ(passes("late", 10), 3);
  EXPECT_EQ(passes("someone-else", 4), 4) << "the rule names one origin only";
}

TEST_F(OriginOverflow, AuthorityRulesSeeTheRealOrigin) {
  ASSERT_TRUE(eng.load_rules({.authority = {{.resource = "res",
                                             .strategy = authority_strategy::white,
                                             .limit_app = "first,second,allowed"}}}));
  fill_the_cap();
  EXPECT_EQ(passes("allowed", 2), 2);
  EXPECT_EQ(passes("intruder", 2), 0);
}

TEST_F(OriginOverflow, TheOverflowNodeIsListedWithTheOriginsAndCounted) {
  fill_the_cap();
  EXPECT_EQ(passes("late-1", 2), 2);
  EXPECT_EQ(passes("late-2", 1), 1);
  const auto* cluster = eng.nodes().find_resource("res");
  ASSERT_NE(cluster, nullptr);
  const node::origin_node* overflow = cluster->overflow_origin();
  ASSERT_NE(overflow, nullptr);
  EXPECT_TRUE(overflow->overflow());
  EXPECT_EQ(overflow->origin(), node::overflow_origin_name);
  EXPECT_EQ(overflow->total_pass(clock.now_ms()), 3u);
  int listed = 0;
  for (const auto* o = cluster->first_origin(); o != nullptr; o = o->next()) {
    listed += o == overflow ? 1 : 0;
  }
  EXPECT_EQ(listed, 1);
  EXPECT_EQ(eng.nodes().overflow().origins.load(), 3u);
}

TEST_F(OriginOverflow, EachResourceHasItsOwnOverflowNode) {
  ASSERT_TRUE(eng.load_rules({.flow = {{.resource = "res", .count = 2, .limit_app = "other"},
                                       {.resource = "res2", .count = 2, .limit_app = "other"}}}));
  fill_the_cap();
  EXPECT_EQ(passes("late", 5), 2);
  int other_resource = 0;
  for (int i = 0; i < 5; ++i) {
    context ctx{eng, "ctx", "late"};
    other_resource += eng.enter(ctx, "res2").passed() ? 1 : 0;
  }
  EXPECT_EQ(other_resource, 2);
  EXPECT_NE(eng.nodes().find_resource("res")->overflow_origin(),
            eng.nodes().find_resource("res2")->overflow_origin());
}

// Invented origins sent to one resource (a scanner's 404s all land in `<unmatched>`) fill that
// resource's share of the pairs, not the whole table: callers of other resources keep nodes, and
// limits, of their own.
TEST(OriginShare, OneResourceCannotTakeEveryOtherResourcesOrigins) {
  manual_clock clock;
  engine eng{engine_options{
      .limits = {.max_origin_nodes = 8, .max_origins_per_resource = 3}, .time = &clock}};
  ASSERT_TRUE(eng.load_rules({.flow = {{.resource = "res", .count = 2, .limit_app = "other"}}}));
  for (int i = 0; i < 100; ++i) {
    const std::string origin = "junk-" + std::to_string(i);  // outlives the context
    context junk{eng, "ctx", origin};
    ASSERT_TRUE(eng.enter(junk, "<unmatched>"));
  }
  EXPECT_EQ(eng.nodes().overflow().origins.load(), 97u) << "three junk origins have nodes";
  const auto passes = [&](std::string_view origin) {
    int n = 0;
    for (int i = 0; i < 5; ++i) {
      context ctx{eng, "ctx", origin};
      n += eng.enter(ctx, "res").passed() ? 1 : 0;
    }
    return n;
  };
  EXPECT_EQ(passes("alice"), 2);
  EXPECT_EQ(passes("bob"), 2) << "bob has a node of his own, not alice's overflow quota";
  EXPECT_EQ(eng.nodes().find_resource("res")->overflow_origin(), nullptr);
  EXPECT_EQ(eng.nodes().overflow().origins.load(), 97u);
}

TEST(OriginShare, ByDefaultAResourceHoldsAQuarterOfThePairs) {
  engine eng{engine_options{.limits = {.max_origin_nodes = 8}}};
  for (int i = 0; i < 5; ++i) {
    const std::string origin = "o-" + std::to_string(i);
    context ctx{eng, "ctx", origin};
    ASSERT_TRUE(eng.enter(ctx, "res"));
  }
  EXPECT_EQ(eng.nodes().overflow().origins.load(), 3u) << "two of the five have nodes";
}

// An unkeyed multiply whose operand a caller can zero erases everything hashed before it: two
// names whose first 16-byte block starts with the mixing constant then collide, whatever
// follows in that block. With the key in every multiply no name can be built that way.
TEST(NameHash, NamesBuiltToZeroAMultiplyDoNotCollide) {
  const std::uint64_t constant = 0xe7037ed1a0b428dbULL;
  std::string a(40, 'x');
  std::string b(40, 'x');
  std::memcpy(a.data(), &constant, sizeof constant);
  std::memcpy(b.data(), &constant, sizeof constant);
  a[8] = 'A';
  b[8] = 'B';
  EXPECT_NE(node::hash_name(a), node::hash_name(b));
}

TEST(NameHash, TheKeyChangesEveryHash) {
  const node::name_hash_key one{1, 2, 3};
  const node::name_hash_key two{4, 5, 6};
  for (const char* s : {"", "a", "ops", "billing", "GET:/users/{id}", "a-rather-long-origin-name"}) {
    EXPECT_NE(node::hash_name(s, one), node::hash_name(s, two)) << s;
    EXPECT_EQ(node::hash_name(s, one), node::hash_name(s, one)) << s;
  }
}

TEST(NameHash, TheProcessKeyIsDrawnAtRandom) {
  const node::name_hash_key a = node::draw_name_hash_key();
  const node::name_hash_key b = node::draw_name_hash_key();
  EXPECT_FALSE(a.seed == b.seed && a.block == b.block && a.last == b.last);
}

}  // namespace
}  // namespace floodgate
