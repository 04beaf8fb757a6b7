// Which shard of a node's counters the calling thread writes.
#pragma once

#include <atomic>
#include <cstdint>

namespace floodgate::stat {

/** The shard a thread records statistics into.

    Every node keeps its hot counters once per shard. The first shard_count() - 1 threads that
    record anything each own one shard exclusively for as long as they live, so their updates are
    plain load + store on cache lines no other thread writes: no lock prefix, no line ping-pong
    between cores. Later threads share the last shard and update it with atomic read-modify-write.
    Readers sum the shards. An entry may exit on another thread than the one that entered: each
    thread writes its own shard and the sums stay exact.

    Readers sum only the shards some thread has claimed (used_shards()): a process with one
    request thread reads one shard, not shard_count().

    This is the thread's identity for statistics only, never request state.
*/
struct writer_shard {
  std::uint32_t index;
  bool exclusive;
};

namespace detail {
/// The calling thread's shard, encoded (index | exclusive << 16); ~0 until claimed. Constant-
/// initialised, so reading it costs one TLS load and no initialisation guard.
inline thread_local std::uint32_t thread_shard = ~std::uint32_t{0};
/// Bit i: some thread has claimed shard i. Set before the thread's first write, never cleared.
inline std::atomic<std::uint32_t> used_shard_bits{0};
std::uint32_t claim_thread_shard() noexcept;
}  // namespace detail

/// The calling thread's shard (claimed on first use, released when the thread exits).
inline writer_shard this_thread_shard() noexcept {
  std::uint32_t v = detail::thread_shard;
  if (v == ~std::uint32_t{0}) [[unlikely]] {
    v = detail::claim_thread_shard();
  }
  return {v & 0xffff, (v >> 16) != 0};
}

/// Shards per node: one per exclusive slot (one per core, 2..16) plus the shared one.
std::uint32_t shard_count() noexcept;

/** The shards any thread has ever written, as a bit set (bit i: shard i); every other shard of
    every node is still zero, so a sum over these shards is the sum over all of them.

    A thread claims its shard, and sets its bit, before its first write, and bits are never
    cleared: a thread always sees its own shard, and a reader ordered after a writer (a join, a
    lock, any acquire of what the writer released) sees the writer's. A racing reader may miss a
    shard just claimed, as it may read an older value of any relaxed counter. Iterate with
    for_each_used_shard(). */
inline std::uint32_t used_shards() noexcept {
  return detail::used_shard_bits.load(std::memory_order_acquire);
}

/// Calls `f(index)` for every shard in used_shards(), in increasing order.
template <class F>
inline void for_each_used_shard(F&& f) noexcept(noexcept(f(std::uint32_t{}))) {
  for (std::uint32_t m = used_shards(); m != 0; m &= m - 1) {
    f(static_cast<std::uint32_t>(__builtin_ctz(m)));
  }
}

}  // namespace floodgate::stat
