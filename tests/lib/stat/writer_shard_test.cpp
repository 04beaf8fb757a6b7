// Writer shards: a thread writes the shard of the CPU it runs on, one restartable step per word.
#include "stat/writer_shard.hpp"

#include "lib/support/cpu_pin.hpp"

#include <gtest/gtest.h>

#include <sched.h>

#include <atomic>
#include <cstdint>
#include <latch>
#include <thread>
#include <vector>

namespace floodgate::stat {
namespace {

constexpr const char* no_cpu_shards = "no per-CPU writer shard here (no rseq, or TSan)";

TEST(WriterShard, AThreadWritesTheShardOfTheCpuItRunsOn) {
  const test::cpu_pin pin;
  if (!pin.per_cpu()) GTEST_SKIP() << no_cpu_shards;
  const writer_shard ws = this_thread_shard();
  EXPECT_TRUE(ws.exclusive);
  EXPECT_EQ(ws.index, static_cast<std::uint32_t>(sched_getcpu()) + 1);
  EXPECT_LT(ws.index, shard_count());
  EXPECT_NE(used_shards() & (1u << ws.index), 0u);  // readers will sum it
}

TEST(WriterShard, ASharedShardScopeWritesTheSharedShardUntilItEnds) {
  const test::cpu_pin pin;
  const writer_shard before = this_thread_shard();
  {
    const shared_shard_scope shared;
    EXPECT_EQ(this_thread_shard().index, 0u);
    EXPECT_FALSE(this_thread_shard().exclusive);
    {
      const shared_shard_scope nested;
      EXPECT_EQ(this_thread_shard().index, 0u);
    }
    EXPECT_EQ(this_thread_shard().index, 0u);  // the outer scope still holds
  }
  EXPECT_EQ(this_thread_shard().index, before.index);
  EXPECT_EQ(this_thread_shard().exclusive, before.exclusive);
}

TEST(WriterShard, AStoreOnTheCpuComparesThenStores) {
  const test::cpu_pin pin;
  if (!pin.per_cpu()) GTEST_SKIP() << no_cpu_shards;
  const std::uint32_t shard = this_thread_shard().index;
  std::atomic<std::uint64_t> word{5};
  EXPECT_EQ(store_on_cpu(word, std::uint64_t{4}, std::uint64_t{9}, shard), cpu_store::changed);
  EXPECT_EQ(word.load(), 5u);  // not what the caller read: left alone
  EXPECT_EQ(store_on_cpu(word, std::uint64_t{5}, std::uint64_t{9}, shard), cpu_store::done);
  EXPECT_EQ(word.load(), 9u);
  std::atomic<std::int32_t> narrow{-1};
  EXPECT_TRUE(add_on_cpu(narrow, std::int32_t{3}, shard));
  EXPECT_EQ(narrow.load(), 2);
  std::atomic<std::int64_t> wide{0};
  EXPECT_TRUE(add_on_cpu(wide, std::int64_t{-7}, shard));
  EXPECT_EQ(wide.load(), -7);
}

TEST(WriterShard, AStoreIntoAnotherCpusShardIsRefused) {
  const test::cpu_pin pin;
  if (!pin.per_cpu()) GTEST_SKIP() << no_cpu_shards;
  if (shard_count() < 3) GTEST_SKIP() << "one CPU: no other CPU's shard";
  const std::uint32_t mine = this_thread_shard().index;
  const std::uint32_t other = mine == 1 ? 2 : 1;
  std::atomic<std::uint64_t> word{5};
  EXPECT_EQ(store_on_cpu(word, std::uint64_t{5}, std::uint64_t{9}, other), cpu_store::moved);
  EXPECT_EQ(word.load(), 5u);
  EXPECT_FALSE(add_on_cpu(word, std::uint64_t{1}, other));
  EXPECT_EQ(word.load(), 5u);
}

TEST(WriterShard, APairAddChecksTheWindowTagsThenStoresBothWords) {
  const test::cpu_pin pin;
  if (!pin.per_cpu()) GTEST_SKIP() << no_cpu_shards;
  const std::uint32_t shard = this_thread_shard().index;
  constexpr unsigned bits = 40;
  alignas(16) std::atomic<std::uint64_t> pair[2] = {};
  // Empty cells count as window 0; a plain second word takes any value.
  pair[1].store(~std::uint64_t{0});  // -1 in flight, as a concurrency word may hold
  EXPECT_EQ(add_pair_on_cpu<false>(pair, 0, 3, 2, shard, bits), cpu_store::done);
  EXPECT_EQ(pair[0].load(), 3u);
  EXPECT_EQ(pair[1].load(), 1u);
  // The first word holds window 7: a pair for window 8 adds nothing to either word.
  pair[0].store((std::uint64_t{7} << bits) | 5);
  EXPECT_EQ(add_pair_on_cpu<false>(pair, 8, 1, 1, shard, bits), cpu_store::changed);
  EXPECT_EQ(pair[0].load(), (std::uint64_t{7} << bits) | 5);
  EXPECT_EQ(pair[1].load(), 1u);
  EXPECT_EQ(add_pair_on_cpu<false>(pair, 7, 1, 1, shard, bits), cpu_store::done);
  EXPECT_EQ(pair[0].load(), (std::uint64_t{7} << bits) | 6);
  EXPECT_EQ(pair[1].load(), 2u);
  // Both tagged: either word in another window refuses the pair.
  pair[1].store((std::uint64_t{6} << bits) | 40);
  EXPECT_EQ(add_pair_on_cpu<true>(pair, 7, 1, 10, shard, bits), cpu_store::changed);
  EXPECT_EQ(pair[0].load(), (std::uint64_t{7} << bits) | 6);
  EXPECT_EQ(pair[1].load(), (std::uint64_t{6} << bits) | 40);
  pair[1].store((std::uint64_t{7} << bits) | 40);
  EXPECT_EQ(add_pair_on_cpu<true>(pair, 7, 1, 10, shard, bits), cpu_store::done);
  EXPECT_EQ(pair[0].load(), (std::uint64_t{7} << bits) | 7);
  EXPECT_EQ(pair[1].load(), (std::uint64_t{7} << bits) | 50);
  if (shard_count() >= 3) {
    const std::uint32_t other = shard == 1 ? 2 : 1;
    EXPECT_EQ(add_pair_on_cpu<true>(pair, 7, 1, 10, other, bits), cpu_store::moved);
    EXPECT_EQ(pair[0].load(), (std::uint64_t{7} << bits) | 7);
  }
}

// As below, with both words of a pair: a preempted pair add is redone whole or not at all, so
// the two counters stay exact and equal.
TEST(WriterShard, ThreadsOfOneCpuNeverLoseOrSplitAPairAdd) {
  if (!this_thread_shard().exclusive) GTEST_SKIP() << no_cpu_shards;
  struct alignas(64) counters {
    std::atomic<std::uint64_t> pair[2] = {};
  };
  std::vector<counters> shards(shard_count());
  constexpr int threads = 16;
  constexpr int rounds = 1'000'000;
  std::latch start(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      start.arrive_and_wait();
      for (int i = 0; i < rounds; ++i) {
        const writer_shard ws = this_thread_shard();
        if (!ws.exclusive || add_pair_on_cpu<true>(shards[ws.index].pair, 0, 1, 3, ws.index,
                                                   40) != cpu_store::done) {
          shards[0].pair[0].fetch_add(1, std::memory_order_relaxed);
          shards[0].pair[1].fetch_add(3, std::memory_order_relaxed);
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  std::uint64_t first = 0;
  std::uint64_t second = 0;
  for (const auto& c : shards) {
    first += c.pair[0].load();
    second += c.pair[1].load();
  }
  EXPECT_EQ(first, std::uint64_t{threads} * rounds);
  EXPECT_EQ(second, 3 * std::uint64_t{threads} * rounds);
}

// Many more threads than CPUs, each adding to its CPU's counter as the statistics do (or to the
// shared one, with an atomic add, after a migration): none of the increments is lost, though the
// scheduler preempts threads in the middle of their steps, and nothing a preempted thread did
// keeps the others off their CPU's counter.
TEST(WriterShard, ThreadsOfOneCpuNeverLoseAnUpdateAndNeverStrandTheShard) {
  if (!this_thread_shard().exclusive) GTEST_SKIP() << no_cpu_shards;
  struct alignas(64) counter {
    std::atomic<std::uint64_t> value{0};
  };
  std::vector<counter> counters(shard_count());
  constexpr int threads = 16;
  constexpr int rounds = 2'000'000;
  std::atomic<std::uint64_t> shared_writes{0};
  std::latch start(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      start.arrive_and_wait();
      std::uint64_t shared = 0;
      for (int i = 0; i < rounds; ++i) {
        const writer_shard ws = this_thread_shard();
        if (!ws.exclusive || !add_on_cpu(counters[ws.index].value, std::uint64_t{1}, ws.index)) {
          counters[0].value.fetch_add(1, std::memory_order_relaxed);
          ++shared;
        }
      }
      shared_writes.fetch_add(shared);
    });
  }
  for (auto& t : pool) t.join();
  std::uint64_t sum = 0;
  for (const auto& c : counters) sum += c.value.load();
  EXPECT_EQ(sum, std::uint64_t{threads} * rounds);
  // Only a migration between reading the CPU and the step sends a write to the shared shard.
  EXPECT_LT(shared_writes.load(), std::uint64_t{threads} * rounds / 100);
}

}  // namespace
}  // namespace floodgate::stat
