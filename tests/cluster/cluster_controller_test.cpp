// A clusterMode rule inside the engine: leased passes, fallback modes, carried over on reload.
#include <floodgate/engine/engine.hpp>

#include <gtest/gtest.h>

namespace floodgate {
namespace {

rule_set cluster_rules(double count) {
  rule_set r;
  r.cluster = cluster_config{};
  r.flow.push_back({.resource = "res", .count = count, .cluster_mode = true});
  return r;
}

std::shared_ptr<cluster_lease> lease_of(const engine& eng) {
  std::shared_ptr<cluster_lease> out;
  eng.for_each_cluster_rule(
      [&](const flow_rule&, std::int32_t, const std::shared_ptr<cluster_lease>& l) { out = l; });
  return out;
}

int passes(engine& eng, int tries) {
  context ctx{eng, "ctx"};
  int n = 0;
  for (int i = 0; i < tries; ++i) {
    if (eng.enter(ctx, "res")) ++n;
  }
  return n;
}

struct ClusterRuleInEngine : ::testing::Test {
  manual_clock time{1'000'000};
  engine eng{{.time = &time}};
};

TEST_F(ClusterRuleInEngine, BlocksUntilALeaseIsGrantedThenPassesExactlyTheLease) {
  ASSERT_TRUE(eng.load_rules(cluster_rules(100)));
  const auto lease = lease_of(eng);
  ASSERT_TRUE(lease);
  EXPECT_EQ(passes(eng, 5), 0);
  EXPECT_EQ(lease->take_misses(), 5u);
  lease->grant(3, time.now_ms() + 50);
  EXPECT_EQ(passes(eng, 10), 3);
}

// The process clock: a lease must end when CLOCK_MONOTONIC says so, not when the kernel's coarse
// tick (late by several ms in a VM) or the engine's millisecond ticker gets there.
TEST(ClusterRuleOnTheProcessClock, NoPassIsSpentOnceTheLeaseHasExpired) {
  engine eng;
  ASSERT_TRUE(eng.load_rules(cluster_rules(100)));
  const auto lease = lease_of(eng);
  const clock& c = eng.time();
  lease->grant(1, ns_to_ms(c.now_ns()) + 60'000);
  ASSERT_EQ(passes(eng, 2), 1) << "a valid lease is spent, and only what it holds";
  int late_passes = 0;
  for (int i = 0; i < 50; ++i) {
    const std::int64_t expiry = ns_to_ms(c.now_ns()) + 1;
    lease->grant(10, expiry);
    while (c.now_ns() < ms_to_ns(expiry)) {
    }
    late_passes += passes(eng, 1);
  }
  EXPECT_EQ(late_passes, 0);
}

// A cluster rule and a local QPS rule both pass inline (spend_leases); whichever blocks, the
// local rule's admission is given back, whatever its place.
TEST_F(ClusterRuleInEngine, ALocalRuleBesideAClusterRuleGetsItsAdmissionBackOnABlock) {
  for (const bool cluster_first : {true, false}) {
    SCOPED_TRACE(cluster_first ? "cluster rule first" : "local rule first");
    engine e{{.time = &time}};
    rule_set rules = cluster_rules(100);
    const flow_rule local{.resource = "res", .count = 2};
    rules.flow.insert(cluster_first ? rules.flow.end() : rules.flow.begin(), local);
    ASSERT_TRUE(e.load_rules(rules));
    const auto lease = lease_of(e);
    lease->grant(1, time.now_ms() + 50);
    EXPECT_EQ(passes(e, 1), 1);
    EXPECT_EQ(passes(e, 1), 0) << "the lease is spent";
    lease->grant(10, time.now_ms() + 50);
    EXPECT_EQ(passes(e, 5), 1) << "the refused entry's local admission was given back";
  }
}

TEST_F(ClusterRuleInEngine, ABlockedEntryNamesTheFlowRule) {
  ASSERT_TRUE(eng.load_rules(cluster_rules(100)));
  context ctx{eng, "ctx"};
  const auto e = eng.enter(ctx, "res");
  ASSERT_FALSE(e);
  EXPECT_EQ(e.block().reason, block_reason::flow);
  EXPECT_EQ(e.block().rule_index, 0);
}

TEST_F(ClusterRuleInEngine, FallbackLocalEnforcesTheFallbackCountPerSecond) {
  ASSERT_TRUE(eng.load_rules(cluster_rules(100)));
  lease_of(eng)->set_mode(cluster_mode::fallback_local, 4);
  EXPECT_EQ(passes(eng, 10), 4);
  time.advance_ms(1000);
  EXPECT_EQ(passes(eng, 10), 4);
}

// A switch to the fallback mid-window: the passes leased in the last window (the debt the source
// sets) count against the local limit, which admitted its whole count on top of them before.
TEST_F(ClusterRuleInEngine, FallbackLocalCountsTheDebtOfTheLastWindowsLeasedPasses) {
  ASSERT_TRUE(eng.load_rules(cluster_rules(100)));
  const auto lease = lease_of(eng);
  lease->set_fallback_debt(6);
  lease->set_mode(cluster_mode::fallback_local, 4);
  EXPECT_EQ(passes(eng, 10), 0);
  lease->set_fallback_debt(1);  // five of them slid out
  EXPECT_EQ(passes(eng, 10), 3);
  EXPECT_EQ(lease->fallback_passes(), 3u);  // what a recovery records in the store
}

TEST_F(ClusterRuleInEngine, FallbackPassLetsEverythingThroughAndCountsIt) {
  ASSERT_TRUE(eng.load_rules(cluster_rules(100)));
  const auto lease = lease_of(eng);
  lease->set_mode(cluster_mode::fallback_pass);
  EXPECT_EQ(passes(eng, 10), 10);
  EXPECT_EQ(lease->unchecked_passes(), 10u);
}

TEST_F(ClusterRuleInEngine, AnUnchangedRuleKeepsItsLeaseAcrossReloads) {
  ASSERT_TRUE(eng.load_rules(cluster_rules(100)));
  const auto before = lease_of(eng);
  rule_set more = cluster_rules(100);
  more.flow.push_back({.resource = "other", .count = 5});
  ASSERT_TRUE(eng.load_rules(more));
  EXPECT_EQ(lease_of(eng), before);
  ASSERT_TRUE(eng.load_rules(cluster_rules(50)));
  EXPECT_NE(lease_of(eng), before);
}

TEST_F(ClusterRuleInEngine, TheEngineRefusesClusterModeWithoutAClusterSection) {
  rule_set r = cluster_rules(1);
  r.cluster.reset();
  EXPECT_FALSE(eng.load_rules(r));
}

}  // namespace
}  // namespace floodgate
