// Per-shard blocks created on a shard's first write (issue 17's memory goal).
#include "stat/shard_blocks.hpp"
#include "stat/statistic_node.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace floodgate::stat {
namespace {

struct alignas(64) line {
  std::atomic<std::uint64_t> a{0};
  std::atomic<std::uint64_t> b{0};
};

TEST(ShardBlocks, NothingIsAllocatedBeforeAWrite) {
  const shard_blocks<line> blocks;
  for (std::uint32_t i = 0; i < shard_count(); ++i) {
    EXPECT_EQ(blocks.get(i), nullptr) << "shard " << i;
  }
}

TEST(ShardBlocks, OnlyTheShardsWrittenHoldABlock) {
  ASSERT_GE(shard_count(), 2u);
  const std::uint32_t cpu = shard_count() - 1;
  shard_blocks<line> blocks;
  line* first = blocks.create(cpu, 3);
  ASSERT_NE(first, nullptr);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(first[i].a.load(), 0u);  // zeroed
    EXPECT_EQ(first[i].b.load(), 0u);
  }
  EXPECT_EQ(blocks.get(cpu), first);
  EXPECT_EQ(blocks.create(cpu, 3), first);  // created once
  for (std::uint32_t i = 0; i < cpu; ++i) {
    EXPECT_EQ(blocks.get(i), nullptr) << "shard " << i;
  }
  // A second shard gets a block of its own; the first keeps its.
  line* shared = blocks.create(0, 3);
  ASSERT_NE(shared, nullptr);
  EXPECT_NE(shared, first);
  EXPECT_EQ(blocks.get(0), shared);
  EXPECT_EQ(blocks.get(cpu), first);
  first[2].a.store(7);
  shared[2].a.store(5);
  EXPECT_EQ(blocks.get(cpu)[2].a.load(), 7u);
  EXPECT_EQ(blocks.get(0)[2].a.load(), 5u);
}

TEST(ShardBlocks, FallbackKeepsAWriterOnItsShardWhenMemoryIsThere) {
  shard_blocks<line> blocks;
  std::uint32_t shard = shard_count() - 1;
  bool exclusive = true;
  line* b = blocks.fallback(shard, exclusive, 1);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(shard, shard_count() - 1);
  EXPECT_TRUE(exclusive);
  EXPECT_EQ(blocks.get(shard), b);
}

TEST(ShardBlocks, RacingCreatorsOfEveryShardAgreeOnOneBlockPerShard) {
  for (int round = 0; round < 50; ++round) {
    shard_blocks<line> blocks;
    const std::uint32_t shards = shard_count();
    constexpr int threads = 8;
    std::vector<line*> seen(threads);
    std::atomic<bool> go{false};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        while (!go.load(std::memory_order_acquire)) {
        }
        line* b = blocks.create(static_cast<std::uint32_t>(t) % shards, 2);
        b[0].a.fetch_add(1);
        seen[static_cast<std::size_t>(t)] = b;
      });
    }
    go.store(true, std::memory_order_release);
    for (auto& th : pool) th.join();
    std::uint64_t total = 0;
    for (std::uint32_t s = 0; s < shards; ++s) {
      line* b = blocks.get(s);
      ASSERT_NE(b, nullptr);
      total += b[0].a.load();
    }
    EXPECT_EQ(total, static_cast<std::uint64_t>(threads));  // no write went to a lost block
    for (int t = 0; t < threads; ++t) {
      EXPECT_EQ(seen[static_cast<std::size_t>(t)],
                blocks.get(static_cast<std::uint32_t>(t) % shards));
    }
  }
}

TEST(ShardBlocks, ANodeWrittenFromTheSharedAndACpuShardSumsBoth) {
  statistic_node node;
  const std::int64_t now = 10'000;
  node.record_pass(node.at(now, {0, false}), 2);  // shared shard, atomics
  node.record_pass(node.at(now), 3);  // this CPU's shard, if the system has them
  node.record_completion(node.at(now, {0, false}), 4, 1, false);
  EXPECT_EQ(node.window_sum(metric_event::pass, now), 5u);
  EXPECT_EQ(node.concurrency(), 1);
  EXPECT_EQ(node.window_sum(metric_event::success, now), 1u);
  EXPECT_DOUBLE_EQ(node.min_rt(now), 4.0);
}

}  // namespace
}  // namespace floodgate::stat
