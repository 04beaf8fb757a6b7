#include "cluster/lease_planner.hpp"

#include <gtest/gtest.h>

namespace floodgate::cluster::detail {
namespace {

// The rule file accepts Sentinel's clusterConfig window keys only for the window Redis keeps
// (config/cluster_section.cpp restates this shape): the two must change together.
static_assert(lease_planner::buckets == 10 &&
              lease_planner::buckets * lease_planner::bucket_ms == 1000);

lease_reply granted(std::int64_t n, std::int64_t bucket, std::int64_t left_ms,
                    std::int64_t retry_ms = 0, std::int64_t short_ms = 0) {
  return {n, bucket, left_ms, retry_ms, short_ms};
}

TEST(LeaseReply, OnlyWhatTheScriptCanAnswerIsTakenAsAnAnswer) {
  const lease_ask ask{.asked = 10};
  constexpr std::int64_t window = lease_planner::window_ms;
  constexpr std::int64_t bucket = lease_planner::bucket_ms;
  EXPECT_EQ(implausible(granted(10, 5, bucket, window, window + bucket), ask), "");
  EXPECT_EQ(implausible(granted(0, 0, 1), ask), "");
  EXPECT_EQ(implausible(granted(11, 5, 50), ask), "granted 11 is outside 0..10");
  EXPECT_EQ(implausible(granted(1'000'000, 5, 50), ask), "granted 1000000 is outside 0..10");
  EXPECT_EQ(implausible(granted(-1, 5, 50), ask), "granted -1 is outside 0..10");
  EXPECT_EQ(implausible(granted(1, -5, 50), ask), "bucket -5 is negative");
  EXPECT_EQ(implausible(granted(1, 5, bucket + 1), ask),
            "ms left in the bucket 101 is outside 1..100");
  EXPECT_EQ(implausible(granted(1, 5, 0), ask), "ms left in the bucket 0 is outside 1..100");
  EXPECT_EQ(implausible(granted(0, 5, 50, 999'999'999), ask),
            "retry ms 999999999 is outside 0..1000");
  EXPECT_EQ(implausible(granted(0, 5, 50, -1), ask), "retry ms -1 is outside 0..1000");
  EXPECT_EQ(implausible(granted(0, 5, 50, 0, window + bucket + 1), ask),
            "short ms 1101 is outside 0..1100");
}

TEST(LeasePlanner, AsksForOnePassWhenNothingIsKnown) {
  cluster_lease lease;
  lease_planner p;
  const auto ask = p.plan(lease, 1000, 100);
  ASSERT_TRUE(ask);
  EXPECT_EQ(ask->asked, 1u);
  EXPECT_EQ(ask->returned, 0u);
}

TEST(LeasePlanner, LeaseEndsBeforeTheStoreBucketDoes) {
  cluster_lease lease;
  lease_planner p;
  const auto ask = p.plan(lease, 1000, 100);
  p.on_reply(lease, *ask, granted(1, 77, 40), 1000);
  EXPECT_EQ(p.bucket(), 77);
  EXPECT_TRUE(lease.try_take(1, 1000 + 40 - lease_planner::expiry_margin_ms - 1));
  lease.grant(1, 1000 + 40 - lease_planner::expiry_margin_ms);
  EXPECT_FALSE(lease.try_take(1, 1000 + 40 - lease_planner::expiry_margin_ms));
}

TEST(LeasePlanner, HoldsOnWhileTheLeaseLastsAndHandsBackWhatExpiredUnspent) {
  cluster_lease lease;
  lease_planner p;
  auto ask = p.plan(lease, 1000, 100);
  p.on_reply(lease, *ask, granted(5, 10, 60), 1000);
  ASSERT_TRUE(lease.try_take(2, 1001));
  EXPECT_FALSE(p.plan(lease, 1030, 100));  // 3 left and valid: nothing to ask
  EXPECT_FALSE(p.plan(lease, 1058, 100));  // expired at 1058; the store's bucket ends at 1060
  EXPECT_EQ(p.spent(), 2u);
  EXPECT_EQ(lease.available(), 0u);
  ask = p.plan(lease, 1062, 100);  // surely over on the store's clock
  ASSERT_TRUE(ask);
  EXPECT_EQ(ask->returned, 3u);
  EXPECT_EQ(ask->returned_bucket, 10);
  p.on_reply(lease, *ask, granted(1, 11, 98), 1062);
  EXPECT_EQ(p.plan(lease, 1162, 100)->returned, 1u);  // only the new lease's unspent pass
}

// A timeout may come after Redis ran the script: sending the hand-back again could free the same
// passes twice and let the fleet pass more than the count.
TEST(LeasePlanner, AHandBackWhoseRequestFailedIsNotSentAgain) {
  cluster_lease lease;
  lease_planner p;
  auto ask = p.plan(lease, 1000, 100);
  p.on_reply(lease, *ask, granted(5, 10, 60), 1000);
  ask = p.plan(lease, 1062, 100);
  ASSERT_TRUE(ask);
  ASSERT_EQ(ask->returned, 5u);
  p.on_failure(*ask);
  ask = p.plan(lease, 1063, 100);
  ASSERT_TRUE(ask);
  EXPECT_EQ(ask->returned, 0u);
}

TEST(LeasePlanner, GrowsTheLeaseWithDemandUpToTheLimit) {
  cluster_lease lease;
  lease_planner p;
  std::int64_t now = 1000;
  std::uint32_t asked = 0;
  for (int bucket = 0; bucket < 10; ++bucket, now += 100) {
    const auto ask = p.plan(lease, now, 100);
    ASSERT_TRUE(ask);
    asked = ask->asked;
    p.on_reply(lease, *ask, granted(ask->asked, bucket, 100 - lease_planner::expiry_margin_ms),
               now);
    while (lease.try_take(1, now)) {
    }
    lease.note_miss(50);  // 50 more wanted every bucket
  }
  EXPECT_GT(asked, 50u);
  EXPECT_LE(asked, 100u);
}

TEST(LeasePlanner, TopsUpAnEmptyLeaseWhenRequestsMissIt) {
  cluster_lease lease;
  lease_planner p;
  auto ask = p.plan(lease, 1000, 100);
  p.on_reply(lease, *ask, granted(1, 10, 90), 1000);
  ASSERT_TRUE(lease.try_take(1, 1001));
  EXPECT_FALSE(p.plan(lease, 1002, 100));  // empty, but nobody missed it
  lease.note_miss(1);
  EXPECT_TRUE(p.plan(lease, 1003, 100));
}

TEST(LeasePlanner, WaitsForTheWindowToFreeWhenTheStoreIsExhausted) {
  cluster_lease lease;
  lease_planner p;
  auto ask = p.plan(lease, 1000, 100);
  p.on_reply(lease, *ask, granted(0, 10, 50, 700), 1000);
  lease.note_miss(1);
  EXPECT_FALSE(p.plan(lease, 1699, 100));
  EXPECT_TRUE(p.plan(lease, 1700, 100));
}

TEST(LeasePlanner, AWindowFullOfItsOwnUnspentPassesIsAskedAgainWithThemAtOnce) {
  cluster_lease lease;
  lease_planner p;
  (void)p.plan(lease, 1000, 10);
  // Asked 3, granted 2: the window is full until 1900, when its oldest bucket leaves.
  p.on_reply(lease, lease_ask{.asked = 3}, granted(2, 10, 60, 900), 1000);
  ASSERT_TRUE(lease.try_take(1, 1001));
  // The lease ends at 1058 with one pass unspent: handing it back frees room, so ask as soon as
  // the store's bucket is over (1062).
  EXPECT_FALSE(p.plan(lease, 1058, 10));
  const auto ask = p.plan(lease, 1062, 10);
  ASSERT_TRUE(ask);
  EXPECT_EQ(ask->returned, 1u);
  EXPECT_EQ(ask->returned_bucket, 10);
  // Granted nothing even so: the window is full of other passes; wait for it.
  p.on_reply(lease, *ask, granted(0, 11, 98, 838), 1062);
  lease.note_miss(1);
  EXPECT_FALSE(p.plan(lease, 1899, 10));
  EXPECT_TRUE(p.plan(lease, 1900, 10));
}

TEST(LeasePlanner, AWindowFullOfSpentPassesIsWaitedFor) {
  cluster_lease lease;
  lease_planner p;
  (void)p.plan(lease, 1000, 10);
  p.on_reply(lease, lease_ask{.asked = 3}, granted(2, 10, 60, 900), 1000);
  ASSERT_TRUE(lease.try_take(2, 1001));
  lease.note_miss(1);
  EXPECT_FALSE(p.plan(lease, 1058, 10));  // nothing to hand back: no room before 1900
  EXPECT_TRUE(p.plan(lease, 1900, 10));
}

// A quiet instance's minimum lease must not take passes a busy instance is short of (with count 2
// and three instances, two idle ones held the whole count): it is asked for speculatively, and
// the store grants such asks only while nobody in the fleet was refused passes.
TEST(LeasePlanner, OnlyAnInstanceWithoutDemandInTheLastWindowAsksSpeculatively) {
  cluster_lease lease;
  lease_planner p;
  auto ask = p.plan(lease, 1000, 100);
  ASSERT_TRUE(ask);
  EXPECT_TRUE(ask->speculative);  // nothing seen yet
  p.on_reply(lease, *ask, granted(1, 10, 50), 1000);
  ASSERT_TRUE(lease.try_take(1, 1001));
  ask = p.plan(lease, 1052, 100);  // the lease ended, spent: demand
  ASSERT_TRUE(ask);
  EXPECT_FALSE(ask->speculative);
  p.on_reply(lease, *ask, granted(1, 11, 98), 1052);
  ask = p.plan(lease, 1152, 100);  // unspent, but the spent pass is 100 ms old
  ASSERT_TRUE(ask);
  EXPECT_FALSE(ask->speculative);
  p.on_reply(lease, *ask, granted(1, 12, 98), 1152);
  ask = p.plan(lease, 2052, 100);  // a whole window without demand
  ASSERT_TRUE(ask);
  EXPECT_TRUE(ask->speculative);
}

TEST(LeasePlanner, ARefusedSpeculativeAskWaitsForTheNextBucketUnlessARequestMisses) {
  cluster_lease lease;
  lease_planner p;
  auto ask = p.plan(lease, 1000, 100);
  ASSERT_TRUE(ask && ask->speculative);
  p.on_reply(lease, *ask, granted(0, 10, 40), 1000);  // the fleet is short
  EXPECT_FALSE(p.plan(lease, 1002, 100));
  EXPECT_FALSE(p.plan(lease, 1039, 100));
  ask = p.plan(lease, 1040, 100);  // the next bucket
  ASSERT_TRUE(ask && ask->speculative);
  p.on_reply(lease, *ask, granted(0, 11, 100), 1040);
  lease.note_miss(1);
  ask = p.plan(lease, 1042, 100);  // a request wants a pass: ask now, for real
  ASSERT_TRUE(ask);
  EXPECT_FALSE(ask->speculative);
}

// After a quiet spell a burst found a one-pass lease, and each refill was sized by the demand of
// the past buckets (none): one request in two was refused far below the count.
/// A one-pass lease of bucket 10 spent at 1001, then a request that missed it: the refill asked.
std::optional<lease_ask> refill_after_a_miss(cluster_lease& lease, lease_planner& p, double limit) {
  const auto first = p.plan(lease, 1000, limit);
  p.on_reply(lease, *first, granted(1, 10, 90), 1000);
  if (!lease.try_take(1, 1001)) return std::nullopt;
  lease.note_miss(1);
  return p.plan(lease, 1002, limit);
}

TEST(LeasePlanner, AnEmptyLeaseThatRequestsMissedIsRefilledToWhatThisBucketWanted) {
  cluster_lease lease;
  lease_planner p;
  auto ask = refill_after_a_miss(lease, p, 20);
  ASSERT_TRUE(ask);
  EXPECT_EQ(ask->asked, 3u);  // 1.5 x (1 spent + 1 missed)
  p.on_reply(lease, *ask, granted(3, 10, 88), 1002);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(lease.try_take(1, 1003));
  lease.note_miss(1);
  ask = p.plan(lease, 1004, 20);
  ASSERT_TRUE(ask);
  EXPECT_EQ(ask->asked, 6u);  // 1.5 x (3 + 1): the lease grows with the burst
}

TEST(LeasePlanner, AnEmptyLeaseThatRequestsMissedIsRefilledToAtLeastABucketsShareOfTheLimit) {
  cluster_lease lease;
  lease_planner p;
  const auto ask = refill_after_a_miss(lease, p, 200);
  ASSERT_TRUE(ask);
  EXPECT_EQ(ask->asked, 20u);  // 200 a window of ten buckets
}

// A pass an instance holds unspent when its bucket ends is one the others were refused while the
// fleet was short, and the window, full of grants, has lost it for a second.
TEST(LeasePlanner, WhileTheFleetIsShortAnInstanceAsksForItsDemandAlone) {
  cluster_lease lease;
  lease_planner p;
  auto ask = p.plan(lease, 1000, 200);
  p.on_reply(lease, *ask, granted(1, 10, 90, 0, 1000), 1000);  // short until 2000
  ASSERT_TRUE(lease.try_take(1, 1001));
  lease.note_miss(1);
  ask = p.plan(lease, 1002, 200);
  ASSERT_TRUE(ask);
  EXPECT_EQ(ask->asked, 2u);  // 1 spent + 1 missed: no margin, not a bucket's share (20)
  p.on_reply(lease, *ask, granted(2, 10, 88), 1002);  // no longer short
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(lease.try_take(1, 1003));
  lease.note_miss(1);
  ask = p.plan(lease, 1004, 200);
  ASSERT_TRUE(ask);
  EXPECT_EQ(ask->asked, 20u);  // a bucket's share again
}

// The lease ends expiry_margin_ms before its bucket does on the local clock, but the store's
// bucket has not ended then: an ask sent at once was granted a pass of the ending bucket (1-2 ms
// left), which expired on arrival and was asked for again a tick later — two identical lease
// calls a bucket for an idle instance.
TEST(LeasePlanner, TheNextLeaseIsAskedForOnlyOnceTheStoreBucketHasEnded) {
  cluster_lease lease;
  lease_planner p;
  auto ask = p.plan(lease, 1000, 100);
  ASSERT_TRUE(ask);
  p.on_reply(lease, *ask, granted(1, 10, 100), 1000);  // bucket 10 ends at about 1100 here
  EXPECT_FALSE(p.plan(lease, 1098, 100));  // the lease expired, the store's bucket has not
  EXPECT_EQ(lease.available(), 0u);        // (revoked all the same: not spent past 1098)
  EXPECT_FALSE(p.plan(lease, 1101, 100));
  ask = p.plan(lease, 1100 + lease_planner::expiry_margin_ms, 100);
  ASSERT_TRUE(ask);
  EXPECT_EQ(ask->returned, 1u);
  EXPECT_EQ(ask->returned_bucket, 10);
}

// What the audit saw: the ask at 1098 reached the store in bucket 10's last millisecond.
TEST(LeasePlanner, AGrantThatExpiresOnArrivalIsNotAskedForAgainBeforeItsBucketEnds) {
  cluster_lease lease;
  lease_planner p;
  auto ask = p.plan(lease, 1000, 100);
  p.on_reply(lease, *ask, granted(1, 10, 1), 1000);  // 1 ms left: the lease is over on arrival
  EXPECT_FALSE(lease.try_take(1, 1000));
  EXPECT_FALSE(p.plan(lease, 1002, 100));  // the same ask would land in bucket 10 again
  ask = p.plan(lease, 1003, 100);
  ASSERT_TRUE(ask);
  EXPECT_EQ(ask->returned, 1u);
  EXPECT_EQ(ask->returned_bucket, 10);
}

}  // namespace
}  // namespace floodgate::cluster::detail
