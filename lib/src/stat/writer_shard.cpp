#include "stat/writer_shard.hpp"

#include <algorithm>
#include <atomic>

#include <linux/membarrier.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#if defined(__SANITIZE_THREAD__)
#define FLOODGATE_SHARD_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FLOODGATE_SHARD_SANITIZED 1
#endif
#endif

// Claims by restartable sequence on x86-64 with glibc's rseq registration; elsewhere, and under
// TSan (which cannot see the sequence's store), by compare-and-swap.
#if defined(__x86_64__) && __has_include(<sys/rseq.h>) && !defined(FLOODGATE_SHARD_SANITIZED)
#include <sys/rseq.h>
#define FLOODGATE_SHARD_RSEQ 1
#endif

namespace floodgate::stat {

namespace {

constexpr std::uint32_t max_cpu_shards = 16;

std::uint32_t cpu_shards() noexcept {
  // One per possible CPU number; CPUs numbered beyond the last write the shared shard.
  static const std::uint32_t n =
      static_cast<std::uint32_t>(std::clamp(get_nprocs_conf(), 1, int{max_cpu_shards}));
  return n;
}

enum : std::uint32_t { free_shard = 0, claimed = 1, taken_over = 2 };

struct alignas(128) claim_word {
  std::atomic<std::uint32_t> state{free_shard};
};
claim_word claims[max_cpu_shards + 1];  // by shard index; [0], the shared shard, is unused

bool hold(std::uint32_t index) noexcept {
  const std::uint32_t bit = 1u << index;
  if ((detail::used_shard_bits.load(std::memory_order_relaxed) & bit) == 0) [[unlikely]] {
    detail::used_shard_bits.fetch_or(bit, std::memory_order_acq_rel);
  }
  detail::thread_shard = index | 1u << 16;
  return true;
}

#if FLOODGATE_SHARD_RSEQ

long membarrier(int cmd) noexcept { return syscall(__NR_membarrier, cmd, 0, 0); }

struct rseq* rseq_area() noexcept {
  return reinterpret_cast<struct rseq*>(static_cast<char*>(__builtin_thread_pointer()) +
                                        __rseq_offset);
}

enum class sequence { claimed, busy, restarted };

/** One restartable sequence: if the thread still runs on `cpu` and `state` is free, mark it
    claimed. The kernel moves a thread preempted or migrated between the first compare and the
    store to the abort label (preceded by glibc's rseq signature), so the compare and the store
    act as one step for every thread of that CPU, without a lock prefix. */
sequence claim_on_cpu(std::atomic<std::uint32_t>& state, std::uint32_t cpu,
                      struct rseq* rs) noexcept {
  __asm__ goto(
      ".pushsection __rseq_cs, \"aw\"\n\t"
      ".balign 32\n\t"
      "3:\n\t"
      ".long 0, 0\n\t"
      ".quad 1f, 2f - 1f, 4f\n\t"
      ".popsection\n\t"
      "leaq 3b(%%rip), %%rax\n\t"
      "movq %%rax, %[cs]\n\t"
      "1:\n\t"
      "cmpl %[cpu], %[current_cpu]\n\t"
      "jnz %l[restarted]\n\t"
      "cmpl $0, %[state]\n\t"
      "jnz %l[busy]\n\t"
      "movl $1, %[state]\n\t"
      "2:\n\t"
      ".pushsection .text.unlikely, \"ax\"\n\t"
      ".byte 0x0f, 0xb9, 0x3d\n\t"
      ".long 0x53053053\n\t"  // RSEQ_SIG, the 4 bytes before the abort address
      "4:\n\t"
      "jmp %l[restarted]\n\t"
      ".popsection\n\t"
      :
      : [cs] "m"(rs->rseq_cs), [cpu] "r"(cpu), [current_cpu] "m"(rs->cpu_id), [state] "m"(state)
      : "memory", "cc", "rax"
      : restarted, busy);
  return sequence::claimed;
restarted:
  return sequence::restarted;
busy:
  return sequence::busy;
}

bool rseq_barrier_available() noexcept {
  static const bool available = [] {
    const long supported = membarrier(MEMBARRIER_CMD_QUERY);
    return supported >= 0 && (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) != 0 &&
           membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ) == 0;
  }();
  return available;
}

#endif

}  // namespace

bool detail::claim_cpu_shard() noexcept {
#if FLOODGATE_SHARD_RSEQ
  if (__rseq_size != 0) {
    struct rseq* rs = rseq_area();
    for (;;) {
      const auto cpu = static_cast<std::int32_t>(*static_cast<volatile std::uint32_t*>(&rs->cpu_id));
      if (cpu < 0 || static_cast<std::uint32_t>(cpu) >= cpu_shards()) {
        return false;  // no rseq for this thread, or a CPU beyond the shards
      }
      const std::uint32_t index = static_cast<std::uint32_t>(cpu) + 1;
      switch (claim_on_cpu(claims[index].state, static_cast<std::uint32_t>(cpu), rs)) {
        case sequence::claimed:
          return hold(index);
        case sequence::busy:
          return false;
        case sequence::restarted:
          break;
      }
    }
  }
#endif
  const int cpu = sched_getcpu();
  if (cpu < 0 || static_cast<std::uint32_t>(cpu) >= cpu_shards()) {
    return false;
  }
  const std::uint32_t index = static_cast<std::uint32_t>(cpu) + 1;
  std::uint32_t expected = free_shard;
  if (!claims[index].state.compare_exchange_strong(expected, claimed, std::memory_order_acquire,
                                                   std::memory_order_relaxed)) {
    return false;
  }
  return hold(index);
}

void detail::release_cpu_shard() noexcept {
  claims[thread_shard & 0xffff].state.store(free_shard, std::memory_order_release);
  thread_shard = 0;
}

bool detail::take_over_shard(std::uint32_t index) noexcept {
  if (index == 0 || index > cpu_shards()) {
    return false;
  }
  auto& state = claims[index].state;
  std::uint32_t expected = free_shard;
#if FLOODGATE_SHARD_RSEQ
  if (__rseq_size != 0) {
    // A claim on that CPU compares and stores without a lock prefix, so this compare-and-swap
    // alone could race with one half-way. The barrier restarts every claim sequence under way;
    // afterwards each claim sees `taken_over`, and one that had already stored shows here.
    if (!rseq_barrier_available() ||
        !state.compare_exchange_strong(expected, taken_over, std::memory_order_acq_rel)) {
      return false;
    }
    if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) != 0) {
      expected = taken_over;
      state.compare_exchange_strong(expected, free_shard, std::memory_order_acq_rel);
      return false;
    }
    return state.load(std::memory_order_acquire) == taken_over;
  }
#endif
  return state.compare_exchange_strong(expected, taken_over, std::memory_order_acq_rel);
}

void detail::hand_back_shard(std::uint32_t index) noexcept {
  claims[index].state.store(free_shard, std::memory_order_release);
}

std::uint32_t shard_count() noexcept { return cpu_shards() + 1; }

}  // namespace floodgate::stat
