#include <floodgate/chain/cluster_lease.hpp>

#include <gtest/gtest.h>

namespace floodgate {
namespace {

TEST(ClusterLease, IsEmptyUntilGranted) {
  cluster_lease lease;
  EXPECT_FALSE(lease.try_take(1, 1000));
  EXPECT_EQ(lease.mode(), cluster_mode::global);
}

TEST(ClusterLease, SpendsExactlyWhatWasGrantedBeforeExpiry) {
  cluster_lease lease;
  EXPECT_EQ(lease.grant(3, 1100), 0u);
  EXPECT_TRUE(lease.try_take(2, 1000));
  EXPECT_FALSE(lease.try_take(2, 1000));
  EXPECT_TRUE(lease.try_take(1, 1099));
  EXPECT_FALSE(lease.try_take(1, 1099));
}

TEST(ClusterLease, RefusesPassesAtAndAfterExpiry) {
  cluster_lease lease;
  lease.grant(5, 1100);
  EXPECT_FALSE(lease.try_take(1, 1100));
  EXPECT_FALSE(lease.try_take(1, 5000));
  EXPECT_EQ(lease.revoke(), 5u);
  EXPECT_EQ(lease.available(), 0u);
}

TEST(ClusterLease, ExpiryComparesAcrossTheThirtyTwoBitWrap) {
  cluster_lease lease;
  const std::int64_t now = (std::int64_t{1} << 32) - 10;
  lease.grant(1, now + 50);  // the expiry's low 32 bits wrapped past zero
  EXPECT_TRUE(lease.try_take(1, now));
}

TEST(ClusterLease, CountsMissesForTheSourceAndResetsThem) {
  cluster_lease lease;
  lease.note_miss(2);
  lease.note_miss(1);
  EXPECT_EQ(lease.take_misses(), 3u);
  EXPECT_EQ(lease.take_misses(), 0u);
}

TEST(ClusterLease, ModeCarriesTheFallbackCount) {
  cluster_lease lease;
  lease.set_mode(cluster_mode::fallback_local, 7);
  EXPECT_EQ(lease.mode(), cluster_mode::fallback_local);
  EXPECT_EQ(lease.fallback_count(), 7);
}

}  // namespace
}  // namespace floodgate
