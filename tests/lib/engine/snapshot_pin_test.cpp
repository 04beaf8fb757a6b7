// A long-lived entry (a stuck request) pins the rule snapshot it was admitted under, and only
// that one: reloads after it do not accumulate (issue 17, fidelity item 7).
#include <floodgate/engine/engine.hpp>

#include "engine/engine_impl.hpp"

#include <gtest/gtest.h>

namespace floodgate {
namespace {

rule_set limit(double count) { return {.flow = {{.resource = "res", .count = count}}}; }

TEST(SnapshotPin, AStuckEntryDoesNotKeepLaterSnapshotsAlive) {
  manual_clock clock;
  engine eng{engine_options{.time = &clock}};
  auto& snapshots = detail::engine_access::impl(eng).snapshot();
  ASSERT_TRUE(eng.load_rules(limit(1000)));
  context stuck_ctx{eng, "ctx"};
  auto stuck = eng.enter(stuck_ctx, "res");
  ASSERT_TRUE(stuck);
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(eng.load_rules(limit(100 + i)));
    context ctx{eng, "ctx"};
    auto e = eng.enter(ctx, "res");  // entries that come and go under every snapshot
    ASSERT_TRUE(e);
  }
  EXPECT_EQ(snapshots.retired_count(), 1u) << "only the stuck entry's snapshot is kept";
  stuck.exit();
  ASSERT_TRUE(eng.load_rules(limit(7)));
  EXPECT_EQ(snapshots.retired_count(), 0u);
  EXPECT_EQ(eng.rules(), limit(7));
}

TEST(SnapshotPin, EntriesUnderManySnapshotsKeepEachOneUntilTheyExit) {
  manual_clock clock;
  engine eng{engine_options{.time = &clock}};
  auto& snapshots = detail::engine_access::impl(eng).snapshot();
  context ctx_a{eng, "a"};
  context ctx_b{eng, "b"};
  ASSERT_TRUE(eng.load_rules(limit(10)));
  auto a = eng.enter(ctx_a, "res");
  ASSERT_TRUE(eng.load_rules(limit(20)));
  auto b = eng.enter(ctx_b, "res");
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(eng.load_rules(limit(30 + i)));
  }
  EXPECT_EQ(snapshots.retired_count(), 2u);
  a.exit();
  ASSERT_TRUE(eng.load_rules(limit(5)));
  EXPECT_EQ(snapshots.retired_count(), 1u);
  b.exit();
  ASSERT_TRUE(eng.load_rules(limit(6)));
  EXPECT_EQ(snapshots.retired_count(), 0u);
}

}  // namespace
}  // namespace floodgate
