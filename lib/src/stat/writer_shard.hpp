// Which shard of a node's counters the calling thread writes.
#pragma once

#include <atomic>
#include <cstdint>

namespace floodgate::stat {

/** The shard a thread records statistics into.

    Every node keeps its hot counters once per shard: shard 0 is shared, and every CPU has a
    shard of its own (shards 1 .. shard_count() - 1). A thread that enters or exits a resource
    first claims the shard of the CPU it runs on (@ref shard_claim); while it holds the claim no
    other thread writes that shard, so its updates are plain load + store on cache lines only
    that CPU writes: no lock prefix, no line ping-pong between cores. The claim is made with a
    restartable sequence (Linux rseq): the kernel restarts it if the thread is preempted or
    migrated half-way, so two threads of one CPU never both hold it, and it costs no atomic
    read-modify-write. It is given back when the call ends, so a pool of any number of threads
    shares the CPUs' shards as the scheduler runs them, and a thread that stops entering holds
    nothing. A thread that holds no claim (its CPU's shard is held by a thread preempted in a
    call, or no rseq) writes the shared shard with atomic read-modify-writes. Readers sum the
    shards. An entry may exit on another CPU than the one that entered: each writer writes the
    shard it holds and the sums stay exact.

    Readers sum only the shards some thread has written (used_shards()).

    This is the thread's identity for statistics only, never request state.
*/
struct writer_shard {
  std::uint32_t index;
  bool exclusive;  ///< the thread holds this shard's claim: plain stores
};

namespace detail {
/// While the thread holds a claim: the shard's index | 1 << 16; otherwise 0 (the shared shard).
/// Constant-initialised, so reading it costs one TLS load and no initialisation guard.
inline thread_local std::uint32_t thread_shard = 0;
/// Bit i: some thread has written shard i. Bit 0 (the shared shard) is always set; the others
/// are set before the first write of their first claim and never cleared.
inline std::atomic<std::uint32_t> used_shard_bits{1};
bool claim_cpu_shard() noexcept;
void release_cpu_shard() noexcept;
}  // namespace detail

/// The shard the calling thread writes now: its claimed CPU shard, or the shared shard 0.
inline writer_shard this_thread_shard() noexcept {
  const std::uint32_t v = detail::thread_shard;
  return {v & 0xffff, (v >> 16) != 0};
}

/** Holds the calling thread's CPU shard for a scope (an entry or an exit): claimed on
    construction if free, given back on destruction. Nested claims are no-ops.

    @par Thread Safety
    A scope object of the calling thread; never handed to another thread.
*/
class shard_claim {
 public:
  shard_claim() noexcept : held_(detail::thread_shard == 0 && detail::claim_cpu_shard()) {}
  ~shard_claim() {
    if (held_) detail::release_cpu_shard();
  }
  shard_claim(const shard_claim&) = delete;
  shard_claim& operator=(const shard_claim&) = delete;

 private:
  bool held_;
};

/** Runs `f()` while the calling thread holds shard `index` (whatever CPU it runs on; a claim
    it already holds stays held), and returns true; false, without running `f`, when another
    thread holds that shard now or the system cannot hand a CPU's shard to another CPU. Slow (a
    process-wide barrier): for rare repairs such as returning an idle CPU's lease, never for the
    request path's common case. */
template <class F>
bool with_shard_of_other_cpu(std::uint32_t index, F&& f);

/// Shards per node: the shared one plus one per CPU (up to 16).
std::uint32_t shard_count() noexcept;

/** The shards any thread has ever written, as a bit set (bit i: shard i); every other shard of
    every node is still zero, so a sum over these shards is the sum over all of them.

    A claim sets its shard's bit before the first write into it, and bits are never cleared: a
    thread always sees its own shard, and a reader ordered after a writer (a join, a lock, any
    acquire of what the writer released) sees the writer's. A racing reader may miss a shard
    just claimed, as it may read an older value of any relaxed counter. Iterate with
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

namespace detail {
bool take_over_shard(std::uint32_t index) noexcept;
void hand_back_shard(std::uint32_t index) noexcept;
}  // namespace detail

template <class F>
bool with_shard_of_other_cpu(std::uint32_t index, F&& f) {
  if (!detail::take_over_shard(index)) {
    return false;
  }
  f();
  detail::hand_back_shard(index);
  return true;
}

}  // namespace floodgate::stat
