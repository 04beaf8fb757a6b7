// The random draws of adaptive breakers: one SplitMix64 stream per writer shard, no lock.
#pragma once

#include "stat/writer_shard.hpp"

#include <atomic>
#include <cstdint>
#include <memory>

namespace floodgate::detail {

/** Uniform 64-bit random numbers for drop decisions, from a seed.

    Each writer shard (stat/writer_shard.hpp) has its own SplitMix64 stream (a counter advanced
    by a fixed odd step, then mixed): a thread draws from its CPU's stream with a compare-and-store on
    the CPU (no lock prefix) on that CPU's cache line; a thread without a CPU shard advances the
    shared stream with one atomic add. The
    same seed on the same shard gives the same sequence, which is what tests rely on.

    @par Thread Safety
    next() from any number of threads.
*/
class drop_random {
 public:
  explicit drop_random(std::uint64_t seed) : states_(new state[stat::shard_count()]) {
    for (std::uint32_t i = 0; i < stat::shard_count(); ++i) {
      // Each shard starts at an unrelated point of the sequence.
      states_[i].counter.store(mix(seed + (std::uint64_t{i} + 1) * shard_step),
                               std::memory_order_relaxed);
    }
  }

  /// The next number of the calling thread's stream.
  std::uint64_t next() noexcept {
    const stat::writer_shard ws = stat::this_thread_shard();
    if (ws.exclusive) [[likely]] {
      std::uint64_t x = 0;
      const auto advance = [&x](std::uint64_t cur, std::uint64_t& next) noexcept {
        next = x = cur + step;
        return true;
      };
      if (stat::update_on_cpu(states_[ws.index].counter, ws.index, advance) ==
          stat::cpu_store::done) [[likely]] {
        return mix(x);
      }
    }
    // The shared stream: no CPU shard, or the thread runs on another CPU now.
    return mix(states_[0].counter.fetch_add(step, std::memory_order_relaxed) + step);
  }

  /// SplitMix64's output function (Steele, Lea and Flood, 2014).
  static constexpr std::uint64_t mix(std::uint64_t z) noexcept {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  static constexpr std::uint64_t step = 0x9e3779b97f4a7c15ULL;  // 2^64 / golden ratio, odd
  static constexpr std::uint64_t shard_step = 0xd1b54a32d192ed03ULL;

  struct alignas(128) state {
    std::atomic<std::uint64_t> counter{0};
  };
  std::unique_ptr<state[]> states_;
};

}  // namespace floodgate::detail
