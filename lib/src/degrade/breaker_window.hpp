// The statistics a circuit breaker trips on: one tumbling window of {bad, total} counts.
#pragma once

#include <floodgate/stat/tagged_cell.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace floodgate::detail {

/** Counts completed requests and the bad ones (slow, or failed) in a single-bucket tumbling
    window of `interval_ms`, aligned to `t - t % interval_ms` (Sentinel's one-sample LeapArray of
    `statIntervalMs`: the counts start from zero at each boundary; they do not slide).

    Each counter is a tagged cell (see stat/tagged_cell.hpp) holding its window number, so a new
    window replaces the old counts without a reset step or a lock.

    @par Thread Safety
    Any number of concurrent writers and readers. The two counters are not read as one snapshot:
    with requests completing at the same time, `bad` can be ahead of `total` by the requests in
    flight (as with Sentinel's LongAdders); it is clamped so a ratio never exceeds 1.
*/
class breaker_window {
 public:
  struct counts {
    std::uint64_t bad = 0;
    std::uint64_t total = 0;
  };

  explicit breaker_window(std::int64_t interval_ms) noexcept : interval_ms_(interval_ms) {}

  /// Records one completed request at `now_ms` and returns the counts of its window.
  counts record(std::int64_t now_ms, bool bad) noexcept {
    const std::uint64_t tag = stat::cell_tag(window_of(now_ms));
    counts c;
    if (bad) {
      add(bad_, tag);
    }
    c.total = add(total_, tag);
    c.bad = std::min(stat::cell_value(bad_.load(std::memory_order_acquire), tag), c.total);
    return c;
  }

  /// The counts of the window containing `now_ms`.
  counts read(std::int64_t now_ms) const noexcept {
    const std::uint64_t tag = stat::cell_tag(window_of(now_ms));
    counts c;
    c.total = stat::cell_value(total_.load(std::memory_order_acquire), tag);
    c.bad = std::min(stat::cell_value(bad_.load(std::memory_order_acquire), tag), c.total);
    return c;
  }

  /// Empties the window (Sentinel's resetStat when a breaker closes).
  void reset() noexcept {
    bad_.store(0, std::memory_order_release);
    total_.store(0, std::memory_order_release);
  }

  std::int64_t interval_ms() const noexcept { return interval_ms_; }

 private:
  std::int64_t window_of(std::int64_t t_ms) const noexcept {
    const std::int64_t w = t_ms / interval_ms_;
    return (t_ms % interval_ms_ < 0) ? w - 1 : w;  // floor, should a clock start below zero
  }

  // Adds one for window `tag` and returns the cell's count for that window afterwards; 0 when
  // the cell already counts a newer window (this request's window is over: nothing to trip on).
  static std::uint64_t add(std::atomic<std::uint64_t>& cell, std::uint64_t tag) noexcept {
    std::uint64_t cur = cell.load(std::memory_order_relaxed);
    for (;;) {
      const std::uint64_t cur_tag = cur >> stat::cell_value_bits;
      std::uint64_t next;
      if (cur != 0 && cur_tag == tag) {
        next = cur + 1;
      } else if (cur == 0 || stat::cell_tag_newer(tag, cur_tag)) {
        next = stat::cell_pack(tag, 1);
      } else {
        return 0;
      }
      if (cell.compare_exchange_weak(cur, next, std::memory_order_acq_rel,
                                     std::memory_order_relaxed)) {
        return next & stat::cell_value_mask;
      }
    }
  }

  std::int64_t interval_ms_;
  std::atomic<std::uint64_t> bad_{0};
  std::atomic<std::uint64_t> total_{0};
};

}  // namespace floodgate::detail
