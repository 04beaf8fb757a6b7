// Publication of immutable snapshots without reader locks or shared reference counts.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace floodgate::detail {

/// A small per-thread stripe number (0..15) spreading counters over cache lines. Not request
/// state: any thread may later release what another pinned.
std::uint8_t this_thread_stripe() noexcept;

/** Holds the current immutable `T` and frees replaced ones once no reader can hold them.

    Readers pin the current value: read the epoch, increment a counter for the epoch's parity on
    their own cache line, then load the pointer. A replaced value is freed only after the epoch
    has advanced past the one in which it was replaced and both parities have drained in the
    right order (a two-phase grace period, as userspace RCU). Reclamation never blocks: the writer
    retries it on later publishes or reclaim() calls, so a long request only delays freeing.

    @par Thread Safety
    acquire()/release() from any thread, lock-free; publish()/reclaim() serialise on a mutex that
    readers never take.
*/
template <class T>
class rcu_cell {
 public:
  struct pin {
    const T* value;
    std::uint8_t stripe;
    std::uint8_t parity;
  };

  explicit rcu_cell(std::unique_ptr<const T> initial) : current_(initial.release()) {}

  ~rcu_cell() {
    delete current_.load(std::memory_order_relaxed);
    for (auto& r : retired_) {
      delete r.first;
    }
  }

  pin acquire() const noexcept {
    const std::uint8_t s = this_thread_stripe();
    const auto parity = static_cast<std::uint8_t>(epoch_.load(std::memory_order_seq_cst) & 1);
    counters_[s].pins[parity].fetch_add(1, std::memory_order_seq_cst);
    return {current_.load(std::memory_order_seq_cst), s, parity};
  }

  void release(std::uint8_t stripe, std::uint8_t parity) const noexcept {
    counters_[stripe].pins[parity].fetch_sub(1, std::memory_order_release);
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
  static constexpr std::size_t stripes = 16;
  struct alignas(128) counter {
    std::atomic<std::int64_t> pins[2] = {0, 0};
  };

  std::int64_t pinned(std::uint64_t parity) const noexcept {
    std::int64_t sum = 0;
    for (const auto& c : counters_) {
      sum += c.pins[parity & 1].load(std::memory_order_seq_cst);
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

  mutable counter counters_[stripes];
  std::atomic<const T*> current_;
  std::atomic<std::uint64_t> epoch_{0};
  mutable std::mutex writer_;
  std::vector<std::pair<const T*, std::uint64_t>> retired_;
};

}  // namespace floodgate::detail
