// Publication of immutable snapshots without reader locks or shared reference counts.
#pragma once

#include "stat/writer_shard.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace floodgate::detail {

/** The writer's half of an asymmetric fence: returns once every thread of the process has
    passed a full memory barrier (Linux membarrier, private expedited). Readers then need only a
    compiler barrier. False when the kernel does not offer it (readers must then fence). */
bool process_wide_barrier() noexcept;
/// Whether process_wide_barrier() works here (registered once, on first use).
bool process_wide_barrier_available() noexcept;

template <class T>
class rcu_cell {
 public:
  struct pin {
    const T* value;
    std::uint8_t stripe;  ///< the counters' shard
    std::uint8_t parity;  ///< bit 0: the epoch's parity; bit 1: counted in the owner's words
  };

  /** A pin held for one scope: released when the reader goes out of scope, whatever the path
      out, unless keep() hands it on (an entry keeps its snapshot pinned until it exits). */
  class reader {
   public:
    explicit reader(const rcu_cell& cell) noexcept : cell_(&cell), pin_(cell.acquire()) {}
    ~reader() {
      if (cell_ != nullptr) cell_->release(pin_.stripe, pin_.parity);
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

  explicit rcu_cell(std::unique_ptr<const T> initial)
      : current_(initial.release()),
        counters_(new counter[stat::shard_count()]),
        owner_counts_(owner_counts_supported()) {}

  ~rcu_cell() {
    delete current_.load(std::memory_order_relaxed);
    for (auto& r : retired_) {
      delete r.first;
    }
  }

  /// Pins the current value for the reader's scope.
  reader read() const noexcept { return reader(*this); }

  pin acquire() const noexcept {
    const stat::writer_shard ws = stat::this_thread_shard();
    const auto parity = static_cast<std::uint8_t>(epoch_.load(std::memory_order_seq_cst) & 1);
    counter& c = counters_[ws.index];
    if (owner_counts_ && ws.exclusive) [[likely]] {
      auto& own = c.own[parity];
      own.store(own.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      std::atomic_signal_fence(std::memory_order_seq_cst);  // the writer fences for us
      return {current_.load(std::memory_order_acquire), static_cast<std::uint8_t>(ws.index),
              static_cast<std::uint8_t>(parity | 2)};
    }
    c.shared[parity].fetch_add(1, std::memory_order_seq_cst);
    return {current_.load(std::memory_order_seq_cst), static_cast<std::uint8_t>(ws.index), parity};
  }

  void release(std::uint8_t stripe, std::uint8_t parity) const noexcept {
    counter& c = counters_[stripe];
    const std::uint8_t p = parity & 1;
    if ((parity & 2) != 0) {
      const stat::writer_shard ws = stat::this_thread_shard();
      if (ws.exclusive && ws.index == stripe) [[likely]] {
        // Our reads of the value happen before this store (release), as before a fetch_sub.
        auto& own = c.own[p];
        own.store(own.load(std::memory_order_relaxed) - 1, std::memory_order_release);
        return;
      }
    }
    c.shared[p].fetch_sub(1, std::memory_order_release);  // another thread's pin, or no owner words
  }

  /// The current value, for writers (valid while the caller holds the writer role).
  const T* current() const noexcept { return current_.load(std::memory_order_acquire); }

  void publish(std::unique_ptr<const T> next) {
    std::lock_guard lock(writer_);
    const T* old = current_.exchange(next.release(), std::memory_order_seq_cst);
    retired_.emplace_back(old, epoch_.load(std::memory_order_seq_cst));
    reclaim_locked();
  }

  void reclaim() {
    std::lock_guard lock(writer_);
    reclaim_locked();
  }

  std::size_t retired_count() const {
    std::lock_guard lock(writer_);
    return retired_.size();
  }

 private:
  struct alignas(128) counter {
    std::atomic<std::int64_t> own[2] = {0, 0};     // written by the shard's owner only
    std::atomic<std::int64_t> shared[2] = {0, 0};  // read-modify-write by anyone
  };

  static bool owner_counts_supported() noexcept {
#if defined(__SANITIZE_THREAD__)
    return false;  // TSan cannot see the process-wide barrier: keep every count an RMW
#else
    return process_wide_barrier_available();
#endif
  }

  std::int64_t pinned(std::uint64_t parity) const noexcept {
    // Every owner's count, and its load of current_ after it, is visible past the barrier; a
    // reader that had not counted yet will load the new value. Without the barrier nothing can
    // be proven: report the parity as pinned and retry later.
    if (owner_counts_ && !process_wide_barrier()) {
      return 1;
    }
    std::int64_t sum = 0;
    for (std::uint32_t i = 0, n = stat::shard_count(); i < n; ++i) {
      const counter& c = counters_[i];
      sum += c.own[parity & 1].load(std::memory_order_seq_cst) +
             c.shared[parity & 1].load(std::memory_order_seq_cst);
    }
    return sum;
  }

  void reclaim_locked() {
    for (int phase = 0; phase < 2 && !retired_.empty(); ++phase) {
      const std::uint64_t e = epoch_.load(std::memory_order_seq_cst);
      if (pinned(e + 1) != 0) {  // readers of epoch e-1 are still inside
        return;
      }
      std::erase_if(retired_, [e](const std::pair<const T*, std::uint64_t>& r) {
        if (r.second + 1 <= e) {
          delete r.first;
          return true;
        }
        return false;
      });
      if (retired_.empty()) {
        return;
      }
      epoch_.store(e + 1, std::memory_order_seq_cst);
    }
  }

  std::atomic<const T*> current_;
  std::unique_ptr<counter[]> counters_;  // one per writer shard
  bool owner_counts_;
  std::atomic<std::uint64_t> epoch_{0};
  mutable std::mutex writer_;
  std::vector<std::pair<const T*, std::uint64_t>> retired_;
};

}  // namespace floodgate::detail
