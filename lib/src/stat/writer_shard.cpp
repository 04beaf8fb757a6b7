#include "stat/writer_shard.hpp"

#include <algorithm>
#include <atomic>
#include <thread>

namespace floodgate::stat {

namespace {

std::uint32_t exclusive_slots() noexcept {
  // One per core: request threads are usually one per core; more threads share the last shard.
  static const std::uint32_t n =
      std::clamp<std::uint32_t>(std::thread::hardware_concurrency(), 2, 16);
  return n;
}

std::atomic<std::uint32_t> claimed{0};  // bit i: slot i is owned by a live thread

class slot_owner {
 public:
  slot_owner() noexcept : shard_{exclusive_slots(), false} {
    std::uint32_t used = claimed.load(std::memory_order_acquire);
    for (;;) {
      const std::uint32_t free = ~used & ((1u << exclusive_slots()) - 1);
      if (free == 0) {
        return;  // every exclusive slot is taken: share the last shard
      }
      const std::uint32_t bit = free & (~free + 1);
      if (claimed.compare_exchange_weak(used, used | bit, std::memory_order_acq_rel,
                                        std::memory_order_acquire)) {
        shard_ = {static_cast<std::uint32_t>(__builtin_ctz(bit)), true};
        return;
      }
    }
  }
  ~slot_owner() {
    if (shard_.exclusive) {
      claimed.fetch_and(~(1u << shard_.index), std::memory_order_acq_rel);
    }
  }
  writer_shard shard() const noexcept { return shard_; }

 private:
  writer_shard shard_;
};

}  // namespace

std::uint32_t detail::claim_thread_shard() noexcept {
  thread_local const slot_owner owner;  // releases the slot when the thread exits
  const writer_shard s = owner.shard();
  detail::used_shard_bits.fetch_or(1u << s.index, std::memory_order_acq_rel);
  detail::thread_shard = s.index | (s.exclusive ? 1u << 16 : 0u);
  return detail::thread_shard;
}

std::uint32_t shard_count() noexcept { return exclusive_slots() + 1; }

}  // namespace floodgate::stat
