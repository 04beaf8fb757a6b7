// Per-writer-shard storage that a shard gets on its first write.
#pragma once

#include "stat/writer_shard.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

namespace floodgate::stat {

/** A block of `T` values (a caller-chosen count) for each writer shard (writer_shard.hpp), each
    shard's block allocated by the first write into it: a node written from one CPU holds that
    CPU's block only, not shard_count() of them.

    The first shard to write keeps its block in the object itself, the block's address tagged
    with the shard's index in its low bits (blocks are cache-line aligned), so the usual case —
    one writer shard — costs one word and finds its block with one load and one compare. Only a
    second shard allocates the table of the others. An untouched object costs two words.

    A block starts value-initialised (zero counters), so an absent block reads as zeros and
    readers skip it. Allocation never throws: create() returns null when memory runs out, and
    fallback() then moves the writer to the shared shard 0, written with atomics.

    @par Thread Safety
    Any number of threads. Racing creators each allocate; the first to publish wins, the others
    free theirs. A reader that loads a block sees it fully initialised (release / acquire).
*/
template <class T>
class shard_blocks {
  static_assert(alignof(T) >= 32, "the shard index lives in the block address's low bits");
  static constexpr std::uintptr_t index_mask = 31;
  /// first_ before any block: low bits no shard has (there are at most 17), so get() needs a
  /// single compare.
  static constexpr std::uintptr_t none = index_mask;

 public:
  shard_blocks() = default;
  ~shard_blocks() {
    const std::uintptr_t first = first_.load(std::memory_order_acquire);
    if (first != none) {
      delete[] block_of(first);
    }
    if (std::atomic<T*>* table = rest_.load(std::memory_order_acquire)) {
      for (std::uint32_t i = 0, n = shard_count(); i < n; ++i) {
        delete[] table[i].load(std::memory_order_acquire);
      }
      delete[] table;
    }
  }
  shard_blocks(const shard_blocks&) = delete;
  shard_blocks& operator=(const shard_blocks&) = delete;

  /// Shard `shard`'s block, or null if nothing has written it yet.
  [[gnu::always_inline]] T* get(std::uint32_t shard) const noexcept {
    const std::uintptr_t first = first_.load(std::memory_order_acquire);
    if ((first & index_mask) == shard) [[likely]] {
      return reinterpret_cast<T*>(first - shard);
    }
    return get_other(shard);
  }

  /// Shard `shard`'s block of `count` values, created if absent; null when memory ran out.
  T* create(std::uint32_t shard, std::size_t count) noexcept {
    if (T* have = get(shard)) [[likely]] {
      return have;
    }
    return create_slow(shard, count);
  }

  /** The block a writer of `shard` writes, created if absent. If memory runs out for a CPU's
      shard, the writer moves to the shared shard 0 (`shard` and `exclusive` are updated, so the
      caller writes with atomics from then on); null only if shard 0's block cannot be created
      either, and the write is then dropped. */
  T* fallback(std::uint32_t& shard, bool& exclusive, std::size_t count) noexcept {
    if (T* b = create(shard, count)) [[likely]] {
      return b;
    }
    shard = 0;
    exclusive = false;
    return create(0, count);
  }

 private:
  /// create() for a shard without a block yet.
  T* create_slow(std::uint32_t shard, std::size_t count) noexcept {
    T* mine = new (std::nothrow) T[count]();
    if (mine == nullptr) {
      return nullptr;
    }
    T* have = publish(shard, mine);
    if (have != mine) {
      delete[] mine;
    }
    return have;
  }

  static T* block_of(std::uintptr_t tagged) noexcept {
    return reinterpret_cast<T*>(tagged & ~index_mask);
  }

  /// Inlined into every get(): called out of line, it was 5-6 % of the time of an entry + exit
  /// on every CPU but the first to write a node (perf, one thread per CPU), which made two
  /// threads on one resource scale worse than two on two resources.
  [[gnu::always_inline]] T* get_other(std::uint32_t shard) const noexcept {
    const std::atomic<T*>* table = rest_.load(std::memory_order_acquire);
    return table != nullptr ? table[shard].load(std::memory_order_acquire) : nullptr;
  }

  /// Publishes `mine` as `shard`'s block unless another thread published one first; returns the
  /// block in force (null if the table of other shards could not be allocated).
  T* publish(std::uint32_t shard, T* mine) noexcept {
    std::uintptr_t first = none;
    const std::uintptr_t tagged = reinterpret_cast<std::uintptr_t>(mine) | shard;
    if (first_.compare_exchange_strong(first, tagged, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
      return mine;
    }
    if ((first & index_mask) == shard) {
      return block_of(first);  // another writer of this shard was first
    }
    std::atomic<T*>* table = rest_.load(std::memory_order_acquire);
    if (table == nullptr) {
      auto* fresh = new (std::nothrow) std::atomic<T*>[shard_count()]();
      if (fresh == nullptr) {
        return nullptr;
      }
      if (rest_.compare_exchange_strong(table, fresh, std::memory_order_acq_rel,
                                        std::memory_order_acquire)) {
        table = fresh;
      } else {
        delete[] fresh;
      }
    }
    T* have = nullptr;
    if (table[shard].compare_exchange_strong(have, mine, std::memory_order_acq_rel,
                                             std::memory_order_acquire)) {
      return mine;
    }
    return have;
  }

  std::atomic<std::uintptr_t> first_{none};  // the first writer's block | its shard index
  std::atomic<std::atomic<T*>*> rest_{nullptr};  // the other shards' blocks, by index
};

}  // namespace floodgate::stat
