// engine::quota: the strictest QPS limit an entry met, for the headers that tell clients their
// limit (issue 17, "Clients read the limit").
#include <floodgate/engine/engine.hpp>

#include <gtest/gtest.h>

namespace floodgate {
namespace {

using namespace std::chrono_literals;

struct Quota : ::testing::Test {
  manual_clock clock{1'000'250};  // 250 ms into the bucket [1 000 000, 1 000 500)
  engine eng{engine_options{.time = &clock}};

  void load(rule_set rules) { ASSERT_TRUE(eng.load_rules(rules)); }
};

TEST_F(Quota, EachPassLeavesOneLessAndTheWholeQuotaReturnsWhenTheWindowSlidesPast) {
  load({.flow = {{.resource = "res", .count = 3}}});
  context ctx{eng, "ctx"};
  for (std::uint64_t left : {2u, 1u, 0u}) {
    auto e = eng.enter(ctx, "res");
    ASSERT_TRUE(e);
    const quota_status q = eng.quota(ctx, e);
    ASSERT_TRUE(q);
    EXPECT_EQ(q.limit, 3u);
    EXPECT_EQ(q.remaining, left);
    EXPECT_EQ(q.rule_index, 0);
    // The passes sit in the bucket ending at 1 000 500; it leaves the 1 s window at 1 001 000.
    EXPECT_EQ(q.reset, 750ms);
  }
  auto blocked = eng.enter(ctx, "res");
  ASSERT_TRUE(blocked.blocked());
  const quota_status q = eng.quota(ctx, blocked);
  EXPECT_EQ(q.remaining, 0u);
  EXPECT_EQ(q.reset, 750ms);
  clock.advance_ms(500);  // the passes are in the older bucket now
  auto later = eng.enter(ctx, "res");
  EXPECT_TRUE(later.blocked());
  EXPECT_EQ(eng.quota(ctx, later).reset, 250ms);
  clock.advance_ms(250);  // they left the window
  auto fresh = eng.enter(ctx, "res");
  ASSERT_TRUE(fresh);
  EXPECT_EQ(eng.quota(ctx, fresh).remaining, 2u);
  EXPECT_EQ(eng.quota(ctx, fresh).reset, 1000ms);
}

TEST_F(Quota, TheRuleWithFewestPassesLeftIsReported) {
  load({.flow = {{.resource = "res", .count = 100},
                 {.resource = "res", .count = 4, .limit_app = "other"},
                 {.resource = "res", .count = 50, .limit_app = "vip"}}});
  context caller{eng, "ctx", "someone"};
  auto e = eng.enter(caller, "res");
  ASSERT_TRUE(e);
  const quota_status q = eng.quota(caller, e);
  EXPECT_EQ(q.rule_index, 1);
  EXPECT_EQ(q.limit, 4u);
  EXPECT_EQ(q.remaining, 3u);
  context vip{eng, "ctx", "vip"};  // `other` does not cover an origin a rule names
  auto v = eng.enter(vip, "res");
  ASSERT_TRUE(v);
  const quota_status qv = eng.quota(vip, v);
  EXPECT_EQ(qv.rule_index, 2);
  EXPECT_EQ(qv.remaining, 49u);
  context anonymous{eng, "ctx"};  // no origin: only the default rule applies
  auto a = eng.enter(anonymous, "res");
  ASSERT_TRUE(a);
  const quota_status qa = eng.quota(anonymous, a);
  EXPECT_EQ(qa.rule_index, 0);
  EXPECT_EQ(qa.remaining, 97u);
}

TEST_F(Quota, TheRuleThatBlockedHasNothingLeft) {
  load({.flow = {{.resource = "res", .count = 10}, {.resource = "res", .count = 2, .limit_app = "other"}}});
  context ctx{eng, "ctx", "someone"};
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(eng.enter(ctx, "res"));
  auto blocked = eng.enter(ctx, "res");
  ASSERT_TRUE(blocked.blocked());
  const quota_status q = eng.quota(ctx, blocked);
  EXPECT_EQ(q.rule_index, blocked.block().rule_index);
  EXPECT_EQ(q.remaining, 0u);
}

TEST_F(Quota, NoQpsRejectRuleNoQuota) {
  load({.flow = {{.resource = "res", .grade = flow_grade::concurrency, .count = 5},
                 {.resource = "res", .count = 5, .behavior = control_behavior::throttling}}});
  context ctx{eng, "ctx"};
  auto e = eng.enter(ctx, "res");
  ASSERT_TRUE(e);
  EXPECT_FALSE(eng.quota(ctx, e));
  auto other = eng.enter(ctx, "no-rules");
  EXPECT_FALSE(eng.quota(ctx, other));
  entry empty;
  EXPECT_FALSE(eng.quota(ctx, empty));
}

}  // namespace
}  // namespace floodgate
