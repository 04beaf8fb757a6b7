// Which shard of a node's counters the calling thread writes, and how it writes it.
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>

#if defined(__SANITIZE_THREAD__)
#define FLOODGATE_SHARD_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FLOODGATE_SHARD_SANITIZED 1
#endif
#endif

// Per-CPU writes by restartable sequence on x86-64 with glibc's rseq registration. Elsewhere, and
// under TSan (which cannot see a sequence's store), every write goes to the shared shard.
#if defined(__x86_64__) && __has_include(<sys/rseq.h>) && !defined(FLOODGATE_SHARD_SANITIZED)
#include <sys/rseq.h>
#define FLOODGATE_SHARD_RSEQ 1
#endif

namespace floodgate::stat {

/** The shard a thread records statistics into.

    Every node keeps its hot counters once per shard: shard 0 is shared, and every CPU has a
    shard of its own (shards 1 .. shard_count() - 1). A thread writes the shard of the CPU it runs
    on, with no claim and no lock prefix: each update of a per-CPU word is one restartable
    sequence (Linux rseq, @ref store_on_cpu) that checks the thread still runs on that CPU and
    that the word still holds what the thread read, then stores. The kernel restarts a sequence
    whose thread is preempted or migrated half-way, so the threads of one CPU update its words
    one after another, and a thread that moved to another CPU is told so and writes the shared
    shard with atomic read-modify-writes instead. Nothing is held between two updates, so any
    number of threads share the CPUs' shards as the scheduler runs them: a thread preempted in
    the middle of a call strands nothing.

    Readers sum the shards, and only those some thread has written (used_shards()). An entry
    may exit on another CPU than the one that entered: each update goes to the shard of the CPU
    it ran on, and the sums stay exact.

    This is the thread's identity for statistics only, never request state.
*/
struct writer_shard {
  std::uint32_t index;
  bool exclusive;  ///< a CPU's shard: write it with store_on_cpu(), never with plain stores
};

namespace detail {
/// Bit i: some thread has written shard i. Bit 0 (the shared shard) is always set; the others
/// are set before the first write into their shard and never cleared.
inline std::atomic<std::uint32_t> used_shard_bits{1};
/// CPUs with a shard of their own (0 until the first call computes it).
inline std::atomic<std::uint32_t> cpu_shard_limit{0};
/// Set by shared_shard_scope: the thread writes the shared shard.
inline thread_local bool shared_only = false;
std::uint32_t compute_cpu_shard_limit() noexcept;
/// CPUs with a shard of their own, computed on the first call.
inline std::uint32_t cpu_shards() noexcept {
  const std::uint32_t limit = cpu_shard_limit.load(std::memory_order_relaxed);
  return limit != 0 ? limit : compute_cpu_shard_limit();
}
void note_used_shard(std::uint32_t index) noexcept;

#if FLOODGATE_SHARD_RSEQ
inline struct rseq* rseq_area() noexcept {
  return reinterpret_cast<struct rseq*>(static_cast<char*>(__builtin_thread_pointer()) +
                                        __rseq_offset);
}
/// The CPU the thread runs on, as the kernel last told it (huge when rseq is not registered).
inline std::uint32_t current_cpu() noexcept {
  return *static_cast<volatile std::uint32_t*>(&rseq_area()->cpu_id);
}
#endif
}  // namespace detail

/// The shard the calling thread writes now: its CPU's shard, or the shared shard 0 (no rseq,
/// a CPU beyond the shards, or a shared_shard_scope).
[[gnu::always_inline]] inline writer_shard this_thread_shard() noexcept {
#if FLOODGATE_SHARD_RSEQ
  const std::uint32_t limit = detail::cpu_shards();
  const std::uint32_t cpu = detail::current_cpu();
  if (cpu < limit && !detail::shared_only) [[likely]] {
    const std::uint32_t index = cpu + 1;
    if ((detail::used_shard_bits.load(std::memory_order_relaxed) & (1u << index)) == 0)
        [[unlikely]] {
      detail::note_used_shard(index);
    }
    return {index, true};
  }
#endif
  return {0, false};
}

/** While it lives, the calling thread writes the shared shard 0 with atomics, as a thread
    without a CPU shard does (tests use it to run both write paths on one machine).

    @par Thread Safety
    A scope object of the calling thread.
*/
class shared_shard_scope {
 public:
  shared_shard_scope() noexcept : before_(detail::shared_only) { detail::shared_only = true; }
  ~shared_shard_scope() { detail::shared_only = before_; }
  shared_shard_scope(const shared_shard_scope&) = delete;
  shared_shard_scope& operator=(const shared_shard_scope&) = delete;

 private:
  bool before_;
};

#if FLOODGATE_SHARD_RSEQ
/* One restartable sequence on the CPU of `cpu`, whose last instruction (the end of BODY) is its
   commit. The descriptor (section __rseq_cs, in the enclosing function's section group) names the
   sequence [1, 2) and its abort handler 4, which follows glibc's rseq signature; the kernel sends
   a thread preempted, migrated or signalled between 1 and 2 to 4, which jumps to the caller's
   `restarted` label. BODY may use %rax and %rcx as scratch and jump to the other LABELS.

   The written word is an input operand and there is no "memory" clobber: CPU shard words are
   std::atomic, read only through atomic operations, which the compiler neither caches nor
   merges, and a caller that needs the sequence ordered against other memory puts a compiler
   fence beside it (rcu_cell). A clobber would make every sequence a full compiler barrier (the
   caller's state reloaded after each of the ~20 per entry + exit); a memory output made GCC 12
   send one restart to the function's entry. BODY may also use %xmm14 and %xmm15 (the 16-byte
   commit of add_pair_on_cpu). */
#define FLOODGATE_UNPAREN(...) __VA_ARGS__
#define FLOODGATE_ON_CPU(BODY, LABELS, ...)                        \
  __asm__ goto(".pushsection __rseq_cs, \"aw?\"\n\t"              \
               ".balign 32\n\t"                                    \
               "3:\n\t"                                            \
               ".long 0, 0\n\t"                                    \
               ".quad 1f, 2f - 1f, 4f\n\t"                         \
               ".popsection\n\t"                                   \
               "leaq 3b(%%rip), %%rax\n\t"                         \
               "movq %%rax, %[cs]\n\t"                             \
               "1:\n\t"                                            \
               "cmpl %[cpu], %[current_cpu]\n\t"                   \
               "jnz 4f\n\t" BODY                                   \
               "2:\n\t"                                            \
               ".pushsection .text.unlikely, \"ax?\"\n\t"          \
               ".byte 0x0f, 0xb9, 0x3d\n\t"                        \
               ".long 0x53053053\n\t"                              \
               "4:\n\t"                                            \
               "jmp %l[restarted]\n\t"                             \
               ".popsection\n\t"                                   \
               :                                                   \
               : __VA_ARGS__                                       \
               : "cc", "rax", "rcx", "xmm14", "xmm15"              \
               : FLOODGATE_UNPAREN LABELS)
#define FLOODGATE_ON_CPU_OPERANDS                                        \
  [cs] "m"(rs->rseq_cs), [cpu] "r"(cpu), [current_cpu] "m"(rs->cpu_id), \
      [word] "m"(word)
#endif

/// What store_on_cpu() did.
enum class cpu_store {
  done,     ///< stored
  changed,  ///< the word no longer held `expected` (or the sequence restarted): read it again
  moved,    ///< the thread runs on another CPU now: nothing stored; write the shared shard
  guarded,  ///< (store_on_cpu_unless) the guard is set: nothing stored
};

/** Stores `desired` into `word` of CPU shard `shard` as store_on_cpu() below does, but declines
    with cpu_store::guarded while `guard` is not zero: the guard is read inside the sequence. A thread of another CPU that sets the guard and then calls
    restart_cpu_sequences() knows that no such store is under way and none will be made until it
    clears the guard: it may then change `word` with atomics. */
[[gnu::always_inline]] inline cpu_store store_on_cpu_unless(
    std::atomic<std::uint64_t>& word, std::uint64_t expected, std::uint64_t desired,
    std::uint32_t shard, const std::atomic<std::uint32_t>& guard) noexcept {
#if FLOODGATE_SHARD_RSEQ
  struct rseq* rs = detail::rseq_area();
  const std::uint32_t cpu = shard - 1;
  FLOODGATE_ON_CPU("cmpl $0, %[guard]\n\t"
                   "jnz %l[guarded]\n\t"
                   "cmpq %[expected], %[word]\n\t"
                   "jnz %l[changed]\n\t"
                   "movq %[desired], %[word]\n\t",
                   (guarded, changed, restarted), FLOODGATE_ON_CPU_OPERANDS,
                   [guard] "m"(guard), [expected] "r"(expected), [desired] "r"(desired));
  return cpu_store::done;
guarded:
  return cpu_store::guarded;
changed:
  return cpu_store::changed;
restarted:
  return detail::current_cpu() == cpu ? cpu_store::changed : cpu_store::moved;
#else
  (void)word;
  (void)expected;
  (void)desired;
  (void)shard;
  (void)guard;
  return cpu_store::moved;
#endif
}

namespace detail {
/// A guard nobody sets: store_on_cpu() is store_on_cpu_unless() with it.
inline const std::atomic<std::uint32_t> never_guarded{0};
}  // namespace detail

/** Stores `desired` into `word`, a word of CPU shard `shard` (writer_shard::index with
    `exclusive`), if the calling thread still runs on that CPU and the word still holds
    `expected`: a compare-and-store without a lock prefix that acts as one step for every thread
    of that CPU. Every writer of a CPU shard's word must use it (or the helpers below); the
    shared shard is written with atomics. Never returns cpu_store::guarded. */
[[gnu::always_inline]] inline cpu_store store_on_cpu(std::atomic<std::uint64_t>& word,
                                                     std::uint64_t expected, std::uint64_t desired,
                                                     std::uint32_t shard) noexcept {
  return store_on_cpu_unless(word, expected, desired, shard, detail::never_guarded);
}

/** Restarts every restartable sequence of this process under way on any CPU, with a full
    memory barrier on each (Linux membarrier, PRIVATE_EXPEDITED_RSEQ): a guard set before it is
    seen by every sequence that commits after it (see store_on_cpu_unless). Slow (it interrupts
    every CPU running a thread of the process): for rare repairs only. False when the system
    cannot do it (nothing happened). */
bool restart_cpu_sequences() noexcept;
/// Whether restart_cpu_sequences() works here (registered on first use).
bool cpu_sequence_restart_available() noexcept;

/** Applies `next` to `word` of CPU shard `shard` as one step for that CPU (see store_on_cpu):
    `next(cur, out)` returns false to leave the word as it is. Returns cpu_store::done when it
    stored, cpu_store::changed when `next` declined, cpu_store::moved when the thread runs on
    another CPU now (nothing stored). */
template <class F>
[[gnu::always_inline]] inline cpu_store update_on_cpu(std::atomic<std::uint64_t>& word,
                                                      std::uint32_t shard, F&& next) noexcept {
  for (;;) {
    const std::uint64_t cur = word.load(std::memory_order_relaxed);
    std::uint64_t out;
    if (!next(cur, out)) {
      return cpu_store::changed;
    }
    const cpu_store r = store_on_cpu(word, cur, out, shard);
    if (r != cpu_store::changed) [[likely]] {
      return r;
    }
  }
}

/// Adds `n` to `word` of CPU shard `shard`; false (nothing added) when the thread runs on
/// another CPU now. The add to memory is the sequence's commit: one instruction, no loop.
template <class T>
[[gnu::always_inline]] inline bool add_on_cpu(std::atomic<T>& word, T n,
                                              std::uint32_t shard) noexcept;

namespace detail {
/// add_on_cpu() after its sequence restarted: again while the thread stays on the CPU.
template <class T>
[[gnu::noinline]] bool add_on_cpu_again(std::atomic<T>& word, T n, std::uint32_t shard) noexcept {
#if FLOODGATE_SHARD_RSEQ
  if (current_cpu() != shard - 1) {
    return false;
  }
#endif
  return add_on_cpu(word, n, shard);
}
}  // namespace detail

template <class T>
[[gnu::always_inline]] inline bool add_on_cpu(std::atomic<T>& word, T n,
                                              std::uint32_t shard) noexcept {
  static_assert(std::is_integral_v<T> && (sizeof(T) == 8 || sizeof(T) == 4));
#if FLOODGATE_SHARD_RSEQ
  struct rseq* rs = detail::rseq_area();
  const std::uint32_t cpu = shard - 1;
  if constexpr (sizeof(T) == 8) {
    FLOODGATE_ON_CPU("addq %[n], %[word]\n\t", (restarted), FLOODGATE_ON_CPU_OPERANDS,
                     [n] "r"(n));
  } else {
    FLOODGATE_ON_CPU("addl %[n], %[word]\n\t", (restarted), FLOODGATE_ON_CPU_OPERANDS,
                     [n] "r"(n));
  }
  return true;
restarted:
  return detail::add_on_cpu_again(word, n, shard);
#else
  (void)word;
  (void)n;
  (void)shard;
  return false;
#endif
}

/** Adds `n` to tagged cell `word` (stat/tagged_cell.hpp, `value_bits` of count) of CPU shard
    `shard` if it holds window tag `tag` (an empty cell counts as tag 0): the tag test and the
    add in one sequence. cpu_store::changed: the cell holds another window, nothing added. */
[[gnu::always_inline]] inline cpu_store add_if_tag_on_cpu(std::atomic<std::uint64_t>& word,
                                                          std::uint64_t tag, std::uint64_t n,
                                                          std::uint32_t shard,
                                                          unsigned value_bits) noexcept;

namespace detail {
/// add_if_tag_on_cpu() after its sequence restarted: again while the thread stays on the CPU.
[[gnu::noinline]] inline cpu_store add_if_tag_on_cpu_again(std::atomic<std::uint64_t>& word,
                                                           std::uint64_t tag, std::uint64_t n,
                                                           std::uint32_t shard,
                                                           unsigned value_bits) noexcept {
#if FLOODGATE_SHARD_RSEQ
  if (current_cpu() != shard - 1) {
    return cpu_store::moved;
  }
#endif
  return add_if_tag_on_cpu(word, tag, n, shard, value_bits);
}
}  // namespace detail

[[gnu::always_inline]] inline cpu_store add_if_tag_on_cpu(std::atomic<std::uint64_t>& word,
                                                          std::uint64_t tag, std::uint64_t n,
                                                          std::uint32_t shard,
                                                          unsigned value_bits) noexcept {
#if FLOODGATE_SHARD_RSEQ
  struct rseq* rs = detail::rseq_area();
  const std::uint32_t cpu = shard - 1;
  const std::uint64_t tag_high = tag << value_bits;
  const std::uint64_t high_mask = ~((std::uint64_t{1} << value_bits) - 1);
  FLOODGATE_ON_CPU("movq %[word], %%rax\n\t"
                   "movq %%rax, %%rcx\n\t"
                   "andq %[high_mask], %%rcx\n\t"
                   "cmpq %[tag_high], %%rcx\n\t"
                   "jnz %l[other_window]\n\t"
                   "addq %[n], %%rax\n\t"
                   "movq %%rax, %[word]\n\t",
                   (other_window, restarted), FLOODGATE_ON_CPU_OPERANDS,
                   [high_mask] "r"(high_mask), [tag_high] "r"(tag_high), [n] "r"(n));
  return cpu_store::done;
other_window:
  return cpu_store::changed;
restarted:
  return detail::add_if_tag_on_cpu_again(word, tag, n, shard, value_bits);
#else
  (void)word;
  (void)tag;
  (void)n;
  (void)shard;
  (void)value_bits;
  return cpu_store::moved;
#endif
}

/** Adds `n0` to tagged cell `pair[0]` and `n1` to `pair[1]` of CPU shard `shard` in one
    sequence whose commit is a single 16-byte store of both words (`pair` 16-byte aligned): one
    sequence for two counters a request always writes together (second_bucket). `pair[0]` must
    hold window tag `tag` (`value_bits` of count, an empty cell counts as tag 0); so must
    `pair[1]` when `SecondTagged`, else it is a plain counter. cpu_store::changed: a cell holds
    another window, nothing added; cpu_store::moved: the thread runs on another CPU now.

    Other CPUs read either word with 8-byte atomic loads, which an aligned 16-byte store never
    tears; the threads of this CPU see both words change at once. */
template <bool SecondTagged>
[[gnu::always_inline]] inline cpu_store add_pair_on_cpu(std::atomic<std::uint64_t>* pair,
                                                        std::uint64_t tag, std::uint64_t n0,
                                                        std::uint64_t n1, std::uint32_t shard,
                                                        unsigned value_bits) noexcept;

namespace detail {
/// add_pair_on_cpu() after its sequence restarted: again while the thread stays on the CPU.
template <bool SecondTagged>
[[gnu::noinline]] cpu_store add_pair_on_cpu_again(std::atomic<std::uint64_t>* pair,
                                                  std::uint64_t tag, std::uint64_t n0,
                                                  std::uint64_t n1, std::uint32_t shard,
                                                  unsigned value_bits) noexcept {
#if FLOODGATE_SHARD_RSEQ
  if (current_cpu() != shard - 1) {
    return cpu_store::moved;
  }
#endif
  return add_pair_on_cpu<SecondTagged>(pair, tag, n0, n1, shard, value_bits);
}
}  // namespace detail

template <bool SecondTagged>
[[gnu::always_inline]] inline cpu_store add_pair_on_cpu(std::atomic<std::uint64_t>* pair,
                                                        std::uint64_t tag, std::uint64_t n0,
                                                        std::uint64_t n1, std::uint32_t shard,
                                                        unsigned value_bits) noexcept {
#if FLOODGATE_SHARD_RSEQ
  struct rseq* rs = detail::rseq_area();
  const std::uint32_t cpu = shard - 1;
  std::atomic<std::uint64_t>& word = pair[0];
  const std::uint64_t tag_high = tag << value_bits;
  const std::uint64_t high_mask = ~((std::uint64_t{1} << value_bits) - 1);
  // Tests a word's window tag (in %rcx, destroyed), the sum of the pair, then the commit.
#define FLOODGATE_PAIR_TAG_TEST "andq %[high_mask], %%rcx\n\t" \
                                "cmpq %[tag_high], %%rcx\n\t"   \
                                "jnz %l[other_window]\n\t"
#define FLOODGATE_PAIR_BODY                     \
  "movq %[word], %%rax\n\t"                    \
  "movq %%rax, %%rcx\n\t" FLOODGATE_PAIR_TAG_TEST \
  "addq %[n0], %%rax\n\t"                      \
  "movq %[second], %%rcx\n\t"                  \
  "addq %[n1], %%rcx\n\t"                      \
  "movq %%rax, %%xmm15\n\t"                    \
  "movq %%rcx, %%xmm14\n\t"                    \
  "punpcklqdq %%xmm14, %%xmm15\n\t"            \
  "movdqa %%xmm15, (%[pair])\n\t"
#define FLOODGATE_PAIR_OPERANDS                                                              \
  FLOODGATE_ON_CPU_OPERANDS, [second] "m"(pair[1]), [pair] "r"(pair),                       \
      [high_mask] "r"(high_mask), [tag_high] "r"(tag_high), [n0] "r"(n0), [n1] "r"(n1)
  if constexpr (SecondTagged) {
    FLOODGATE_ON_CPU("movq %[second], %%rcx\n\t" FLOODGATE_PAIR_TAG_TEST FLOODGATE_PAIR_BODY,
                     (other_window, restarted), FLOODGATE_PAIR_OPERANDS);
  } else {
    FLOODGATE_ON_CPU(FLOODGATE_PAIR_BODY, (other_window, restarted), FLOODGATE_PAIR_OPERANDS);
  }
#undef FLOODGATE_PAIR_OPERANDS
#undef FLOODGATE_PAIR_BODY
#undef FLOODGATE_PAIR_TAG_TEST
  return cpu_store::done;
other_window:
  return cpu_store::changed;
restarted:
  return detail::add_pair_on_cpu_again<SecondTagged>(pair, tag, n0, n1, shard, value_bits);
#else
  (void)pair;
  (void)tag;
  (void)n0;
  (void)n1;
  (void)shard;
  (void)value_bits;
  return cpu_store::moved;
#endif
}

/// Shards per node: the shared one plus one per CPU (up to 16).
std::uint32_t shard_count() noexcept;

/** The shards any thread has ever written, as a bit set (bit i: shard i); every other shard of
    every node is still zero, so a sum over these shards is the sum over all of them.

    this_thread_shard() sets its shard's bit before the thread's first write into it, and bits
    are never cleared: a thread always sees its own shard, and a reader ordered after a writer (a
    join, a lock, any acquire of what the writer released) sees the writer's. A racing reader may
    miss a shard just written the first time, as it may read an older value of any relaxed
    counter. Iterate with for_each_used_shard(). */
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
