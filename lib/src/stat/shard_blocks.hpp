// Per-writer-shard storage that a shard gets on its first write.
#pragma once

#include "stat/writer_shard.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <new>

namespace floodgate::stat {

/** `per_shard` values of `T` for each writer shard (writer_shard.hpp), each shard's block
    allocated by the first write into it: a node written from one CPU holds that CPU's block
    only, not shard_count() of them. Untouched shards cost one null pointer.

    A block starts value-initialised (zero counters), so an absent block reads as zeros and
    readers simply skip it. Allocation never throws: create() returns null when memory runs out,
    and the caller falls back to the shared shard 0, written with atomics (see fallback()).

    @par Thread Safety
    Any number of threads. Racing creators each allocate; the first to publish wins, the others
    free theirs. A reader that loads a block sees it fully initialised (release / acquire).
*/
template <class T>
class shard_blocks {
 public:
  explicit shard_blocks(std::uint32_t per_shard)
      : slots_(new std::atomic<T*>[shard_count()]()), per_shard_(per_shard) {}
  ~shard_blocks() {
    for (std::uint32_t i = 0, n = shard_count(); i < n; ++i) {
      delete[] slots_[i].load(std::memory_order_acquire);
    }
  }
  shard_blocks(const shard_blocks&) = delete;
  shard_blocks& operator=(const shard_blocks&) = delete;

  std::uint32_t per_shard() const noexcept { return per_shard_; }

  /// Shard `shard`'s block, or null if nothing has written it yet.
  T* get(std::uint32_t shard) const noexcept {
    return slots_[shard].load(std::memory_order_acquire);
  }

  /// Shard `shard`'s block, created if absent; null only when memory ran out.
  T* create(std::uint32_t shard) noexcept {
    T* have = get(shard);
    if (have != nullptr) [[likely]] {
      return have;
    }
    T* mine = new (std::nothrow) T[per_shard_]();
    if (mine == nullptr) {
      return nullptr;
    }
    if (slots_[shard].compare_exchange_strong(have, mine, std::memory_order_acq_rel,
                                              std::memory_order_acquire)) {
      return mine;
    }
    delete[] mine;
    return have;
  }

  /** The block a writer of `shard` writes, created if absent. If memory runs out for a CPU's
      shard, the writer moves to the shared shard 0 (`shard` and `exclusive` are updated, so the
      caller writes with atomics from then on); null only if shard 0 cannot be created either,
      and the write is then dropped. */
  T* fallback(std::uint32_t& shard, bool& exclusive) noexcept {
    if (T* b = create(shard)) [[likely]] {
      return b;
    }
    shard = 0;
    exclusive = false;
    return create(0);
  }

 private:
  std::unique_ptr<std::atomic<T*>[]> slots_;
  std::uint32_t per_shard_;
};

}  // namespace floodgate::stat
