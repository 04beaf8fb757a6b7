// Which shard of a node's counters the calling thread writes.
#pragma once

#include <cstdint>

namespace floodgate::stat {

/** The shard a thread records statistics into.

    Every node keeps its hot counters once per shard. The first shard_count() - 1 threads that
    record anything each own one shard exclusively for as long as they live, so their updates are
    plain load + store on cache lines no other thread writes: no lock prefix, no line ping-pong
    between cores. Later threads share the last shard and update it with atomic read-modify-write.
    Readers sum the shards. An entry may exit on another thread than the one that entered: each
    thread writes its own shard and the sums stay exact.

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

}  // namespace floodgate::stat
