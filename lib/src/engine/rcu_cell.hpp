// Publication of immutable snapshots without reader locks or shared reference counts.
#pragma once

#include "stat/writer_shard.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

namespace floodgate::detail {

/** The writer's half of an asymmetric fence: returns once every thread of the process has
    passed a full memory barrier (Linux membarrier, private expedited). Readers then need only a
    compiler barrier. False when the kernel does not offer it (readers must then fence). */
bool process_wide_barrier() noexcept;
/// Whether process_wide_barrier() works here (registered once, on first use).
bool process_wide_barrier_available() noexcept;

/** A value that readers pin without locks and a writer replaces (read-copy-update).

    Every published value gets a *slot* of its own with reader counts per writer shard; a
    reader counts itself in the slot of the value it reads, so a pin holds that one value and
    nothing else. A replaced value is freed as soon as its own slot's counts are zero, whatever
    other slots are pinned: one reader that never leaves (a stuck request's entry) keeps one
    old value alive, not every value published after it. Slots are recycled, so their counters
    outlive every value; at most @ref max_slots values can be alive at once.

    Readers: count in the slot the current index names, then check that the index has not
    moved (else uncount and retry); the writer, after moving the index, waits for every thread
    to pass a barrier before it reads a retired slot's counts. Either the writer sees the
    reader's count, or the reader sees the new index and backs off. A thread on a CPU with a
    writer shard counts in that CPU's word with a compare-and-store on the CPU (no lock prefix,
    stat::add_on_cpu), made visible by the writer's process-wide barrier (Linux membarrier);
    without it, every count is a read-modify-write. A pin's count is the sum of both words over
    the shards, so a pin counted on one CPU may be uncounted in another's shared word.

    @par Thread Safety
    acquire / release / read: any number of threads, lock-free. publish / reclaim: serialised
    internally.
*/
template <class T>
class rcu_cell {
  struct alignas(128) counter {
    std::atomic<std::int64_t> own{0};     // written on the shard's CPU only (add_on_cpu)
    std::atomic<std::int64_t> shared{0};  // read-modify-write by anyone
  };
  struct slot {
    std::atomic<const T*> value{nullptr};
    std::unique_ptr<counter[]> counters;  // one per writer shard
  };
  static constexpr std::uint32_t chunk_slots = 8;
  static constexpr std::uint32_t max_chunks = 512;
  static constexpr std::uint16_t owned_bit = 0x8000;

 public:
  /// The most values alive at once (the current one and those still pinned).
  static constexpr std::uint32_t max_slots = chunk_slots * max_chunks;
  static_assert(max_slots <= owned_bit);

  struct pin {
    const T* value;
    std::uint16_t slot;   ///< the value's slot; bit 15: counted in the owner's word
    std::uint8_t stripe;  ///< the counters' shard
  };

  /** A pin held for one scope: released when the reader goes out of scope, whatever the path
      out, unless keep() hands it on (an entry keeps its snapshot pinned until it exits). */
  class reader {
   public:
    explicit reader(const rcu_cell& cell) noexcept : cell_(&cell), pin_(cell.acquire()) {}
    ~reader() {
      if (cell_ != nullptr) cell_->release(pin_.stripe, pin_.slot);
    }
    reader(const reader&) = delete;
    reader& operator=(const reader&) = delete;

    const T& operator*() const noexcept { return *pin_.value; }
    const T* operator->() const noexcept { return pin_.value; }
    /// Hands the pin to the caller, who must release() it.
    pin keep() noexcept {
      cell_ = nullptr;
      return pin_;
    }

   private:
    const rcu_cell* cell_;
    pin pin_;
  };

  explicit rcu_cell(std::unique_ptr<const T> initial) : owner_counts_(owner_counts_supported()) {
    const std::uint32_t first = take_free_slot_locked();
    const T* value = initial.release();
    slot_at(first).value.store(value, std::memory_order_relaxed);
    current_value_.store(value, std::memory_order_relaxed);
    current_.store(first, std::memory_order_release);
  }

  ~rcu_cell() {
    for (std::uint32_t c = 0; c < max_chunks; ++c) {
      slot* chunk = chunks_[c].load(std::memory_order_relaxed);
      if (chunk == nullptr) break;
      for (std::uint32_t i = 0; i < chunk_slots; ++i) {
        delete chunk[i].value.load(std::memory_order_relaxed);
      }
      delete[] chunk;
    }
  }
  rcu_cell(const rcu_cell&) = delete;
  rcu_cell& operator=(const rcu_cell&) = delete;

  /// Pins the current value for the reader's scope.
  reader read() const noexcept { return reader(*this); }

  pin acquire() const noexcept {
    const stat::writer_shard ws = stat::this_thread_shard();
    const auto stripe = static_cast<std::uint8_t>(ws.index);
    if (owner_counts_ && ws.exclusive) [[likely]] {
      for (;;) {
        const std::uint32_t i = current_.load(std::memory_order_acquire);
        const slot& s = slot_at(i);
        counter& c = s.counters[ws.index];
        if (!stat::add_on_cpu(c.own, std::int64_t{1}, ws.index)) [[unlikely]] {
          break;  // the thread runs on another CPU now: count in the shared words
        }
        std::atomic_signal_fence(std::memory_order_seq_cst);  // the writer fences for us
        if (current_.load(std::memory_order_acquire) == i) [[likely]] {
          return {s.value.load(std::memory_order_acquire),
                  static_cast<std::uint16_t>(i | owned_bit), stripe};
        }
        uncount(c, ws.index);
      }
    }
    for (;;) {
      const std::uint32_t i = current_.load(std::memory_order_seq_cst);
      const slot& s = slot_at(i);
      auto& shared = s.counters[ws.index].shared;
      shared.fetch_add(1, std::memory_order_seq_cst);
      if (current_.load(std::memory_order_seq_cst) == i) [[likely]] {
        return {s.value.load(std::memory_order_acquire), static_cast<std::uint16_t>(i), stripe};
      }
      shared.fetch_sub(1, std::memory_order_release);
    }
  }

  void release(std::uint8_t stripe, std::uint16_t pinned_slot) const noexcept {
    counter& c = slot_at(pinned_slot & ~owned_bit).counters[stripe];
    if ((pinned_slot & owned_bit) != 0) {
      const stat::writer_shard ws = stat::this_thread_shard();
      if (ws.exclusive && ws.index == stripe) [[likely]] {
        // Our reads of the value happen before this store (x86 stores are releases; the fence
        // keeps the compiler from moving them after it), as before a fetch_sub.
        std::atomic_signal_fence(std::memory_order_seq_cst);
        uncount(c, stripe);
        return;
      }
    }
    c.shared.fetch_sub(1, std::memory_order_release);  // another thread's pin, or no owner words
  }

  /** The current value, for writers (valid while the caller holds the writer role), and for
      readers that only compare it with the value they pinned (it may lag a publish a moment). */
  const T* current() const noexcept { return current_value_.load(std::memory_order_acquire); }

  /** Publishes `next` and frees every replaced value no reader pins. Throws std::length_error
      when @ref max_slots values are pinned (nothing changes then). */
  void publish(std::unique_ptr<const T> next) {
    std::lock_guard lock(writer_);
    if (free_.empty()) {
      reclaim_locked();  // reuse a slot before growing
    }
    const std::uint32_t j = take_free_slot_locked();
    const T* value = next.release();
    slot_at(j).value.store(value, std::memory_order_release);
    retired_.push_back(current_.exchange(j, std::memory_order_seq_cst));
    current_value_.store(value, std::memory_order_release);
    reclaim_locked();
  }

  void reclaim() {
    std::lock_guard lock(writer_);
    reclaim_locked();
  }

  /// Replaced values not freed yet (pinned, or not checked since).
  std::size_t retired_count() const {
    std::lock_guard lock(writer_);
    return retired_.size();
  }

 private:
  static bool owner_counts_supported() noexcept {
#if defined(__SANITIZE_THREAD__)
    return false;  // TSan cannot see the process-wide barrier: keep every count an RMW
#else
    return process_wide_barrier_available();
#endif
  }

  /// Takes one count off `c` for a pin counted in `c.own` by a thread on shard `shard`'s CPU.
  static void uncount(counter& c, std::uint32_t shard) noexcept {
    if (!stat::add_on_cpu(c.own, std::int64_t{-1}, shard)) {
      c.shared.fetch_sub(1, std::memory_order_release);  // moved to another CPU since
    }
  }

  slot& slot_at(std::uint32_t i) const noexcept {
    return chunks_[i / chunk_slots].load(std::memory_order_acquire)[i % chunk_slots];
  }

  std::int64_t pinned(const slot& s) const noexcept {
    std::int64_t sum = 0;
    for (std::uint32_t k = 0, n = stat::shard_count(); k < n; ++k) {
      // `shared` first, in its own statement: a reader that counted in `own` and backs off
      // after moving to another CPU takes its count off `shared`, after its +1 in `own` is
      // visible (the fetch_sub drains its store). Read in the other order, a +1 missed in
      // `own` and its -1 seen in `shared` would sum one low, and a slot one other reader still
      // pins would read as free. In this order the sum can only be high for a moment.
      const std::int64_t shared = s.counters[k].shared.load(std::memory_order_seq_cst);
      sum += shared + s.counters[k].own.load(std::memory_order_seq_cst);
    }
    return sum;
  }

  void reclaim_locked() {
    if (retired_.empty()) {
      return;
    }
    // Every reader's count, and its load of the index after it, is visible past the barrier:
    // a reader that had not counted yet will see the new index and back off. Without the
    // barrier nothing can be proven: keep everything and retry later.
    if (owner_counts_ && !process_wide_barrier()) {
      return;
    }
    std::erase_if(retired_, [this](std::uint32_t i) {
      slot& s = slot_at(i);
      if (pinned(s) != 0) {
        return false;
      }
      delete s.value.exchange(nullptr, std::memory_order_relaxed);
      free_.push_back(i);
      return true;
    });
  }

  std::uint32_t take_free_slot_locked() {
    if (free_.empty()) {
      const std::uint32_t chunk = slots_ / chunk_slots;
      if (chunk == max_chunks) {
        throw std::length_error("floodgate: too many rule snapshots pinned by open entries");
      }
      auto fresh = std::make_unique<slot[]>(chunk_slots);
      for (std::uint32_t i = 0; i < chunk_slots; ++i) {
        fresh[i].counters = std::make_unique<counter[]>(stat::shard_count());
      }
      free_.reserve(free_.size() + chunk_slots);
      retired_.reserve(slots_ + chunk_slots);
      for (std::uint32_t i = chunk_slots; i > 0; --i) {
        free_.push_back(slots_ + i - 1);
      }
      chunks_[chunk].store(fresh.release(), std::memory_order_release);
      slots_ += chunk_slots;
    }
    const std::uint32_t i = free_.back();
    free_.pop_back();
    return i;
  }

  std::atomic<std::uint32_t> current_{0};      // the current value's slot
  std::atomic<const T*> current_value_{nullptr};  // its value (current())
  bool owner_counts_;
  std::atomic<slot*> chunks_[max_chunks] = {};  // inline: one load less for every reader
  mutable std::mutex writer_;
  std::uint32_t slots_ = 0;            // slots allocated (whole chunks)
  std::vector<std::uint32_t> free_;    // slots without a value
  std::vector<std::uint32_t> retired_;  // replaced values not freed yet
};

}  // namespace floodgate::detail
