// Writer shards: a call holds its CPU's shard alone and gives it back when it ends.
#include "stat/writer_shard.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <latch>
#include <thread>
#include <vector>

namespace floodgate::stat {
namespace {

TEST(WriterShard, AThreadOutsideACallWritesTheSharedShard) {
  EXPECT_EQ(this_thread_shard().index, 0u);
  EXPECT_FALSE(this_thread_shard().exclusive);
}

TEST(WriterShard, AClaimHoldsACpuShardUntilItsScopeEnds) {
  {
    const shard_claim claim;
    const writer_shard held = this_thread_shard();
    ASSERT_TRUE(held.exclusive);  // nothing else holds this CPU's shard
    EXPECT_GE(held.index, 1u);
    EXPECT_LT(held.index, shard_count());
    EXPECT_NE(used_shards() & (1u << held.index), 0u);
    {
      const shard_claim nested;  // a call inside a call keeps the outer claim
      EXPECT_EQ(this_thread_shard().index, held.index);
    }
    EXPECT_EQ(this_thread_shard().index, held.index);
  }
  EXPECT_EQ(this_thread_shard().index, 0u);  // given back: a thread that stops holds nothing
}

TEST(WriterShard, AHeldShardCannotBeTakenOverAndAFreeOneCan) {
  std::uint32_t mine = 0;
  {
    const shard_claim claim;
    mine = this_thread_shard().index;
    ASSERT_TRUE(this_thread_shard().exclusive);
    bool ran = false;
    EXPECT_FALSE(with_shard_of_other_cpu(mine, [&] { ran = true; }));
    EXPECT_FALSE(ran);
  }
  bool ran = false;
  EXPECT_TRUE(with_shard_of_other_cpu(mine, [&] { ran = true; }));
  EXPECT_TRUE(ran);
  const shard_claim again;  // handed back
  EXPECT_TRUE(this_thread_shard().exclusive);
}

// Many more threads than CPUs: every increment made under a claim is a plain load and store on
// the claimed shard's counter (as the statistics do), and none is lost.
TEST(WriterShard, ClaimsNeverLetTwoThreadsWriteOneShard) {
  struct alignas(64) counter {
    std::atomic<std::uint64_t> value{0};
  };
  std::vector<counter> counters(shard_count());
  constexpr int threads = 16;
  constexpr int rounds = 20'000;
  std::latch start(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      start.arrive_and_wait();
      for (int i = 0; i < rounds; ++i) {
        const shard_claim claim;
        const writer_shard ws = this_thread_shard();
        auto& c = counters[ws.index].value;
        if (ws.exclusive) {
          c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        } else {
          c.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  std::uint64_t sum = 0;
  for (const auto& c : counters) sum += c.value.load();
  EXPECT_EQ(sum, std::uint64_t{threads} * rounds);
}

}  // namespace
}  // namespace floodgate::stat
