// The statistics a circuit breaker trips on: one tumbling window of {bad, total} counts.
#pragma once

#include "stat/leap_array.hpp"
#include "stat/shard_blocks.hpp"
#include "stat/tagged_cell.hpp"
#include "stat/writer_shard.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

namespace floodgate::detail {

/** Counts completed requests and the bad ones (slow, or failed) in a single-bucket tumbling
    window of `interval_ms`, aligned to `t - t % interval_ms` (Sentinel's one-sample LeapArray of
    `statIntervalMs`: the counts start from zero at each boundary; they do not slide).

    The counts are kept per writer shard (stat/writer_shard.hpp): a thread that holds its CPU's
    shard updates that CPU's cache line with a plain load and store, so completions on several cores do
    not take turns on one line. A shard's line is allocated by its first completion
    (stat/shard_blocks.hpp); should that fail, the completion counts in the shared shard 0. Each counter is a tagged cell (stat/tagged_cell.hpp) holding its
    window number, so a new window replaces the old counts without a reset step or a lock.
    reset() moves every later window number one ahead: cells written before it belong to a window
    no reader asks for any more.

    A good request whose own shard has already counted more than `enough` completions in the
    window cannot be the one that crosses a threshold (the window had `enough` before it, and a
    good request only lowers a ratio), so record() skips the sum over the shards for it.

    @par Thread Safety
    Any number of concurrent writers and readers. The shards are not read as one snapshot: with
    requests completing at the same time, `bad` can be ahead of `total` by the requests in flight
    (as with Sentinel's LongAdders); it is clamped so a ratio never exceeds 1.
*/
class breaker_window {
 public:
  struct counts {
    std::uint64_t bad = 0;
    std::uint64_t total = 0;
  };

  explicit breaker_window(std::int64_t interval_ms)
      : interval_ms_(interval_ms) {}

  /** Records one completed request at `now_ms` and returns the counts of its window; zero
      counts when this request cannot trip anything: its window is already over, or it is good
      and its own shard alone has more than `enough` in the window. */
  counts record(std::int64_t now_ms, bool bad, std::uint64_t enough) noexcept {
    const std::uint64_t tag = tag_at(now_ms);
    const stat::writer_shard ws = stat::this_thread_shard();
    std::uint32_t index = ws.index;
    bool exclusive = ws.exclusive;
    shard* s = shards_.get(index);
    if (s == nullptr) [[unlikely]] {
      s = shards_.fallback(index, exclusive, 1);
      if (s == nullptr) {
        return {};  // no memory for even the shared shard: not counted
      }
    }
    // Each add goes to the writer's CPU shard, or the shared one once the thread has moved.
    const auto add_to = [&](std::atomic<std::uint64_t> shard::*cell) noexcept -> std::uint64_t {
      for (;;) {
        const added a = add(s->*cell, tag, index, exclusive);
        if (!a.moved) [[likely]] {
          return a.count;
        }
        index = 0;
        exclusive = false;
        s = shards_.create(0, 1);
        if (s == nullptr) return 0;
      }
    };
    if (bad) {
      add_to(&shard::bad);
      if (s == nullptr) return {};
    }
    const std::uint64_t own = add_to(&shard::total);
    if (own == 0 || (!bad && own > enough)) {
      return {};
    }
    // Two completions at once on two CPUs each store to their own shard, then read the other's:
    // a CPU shard's store is a plain one, which x86 may keep in its store buffer past the loads
    // that follow, so without a full fence both could miss the other's count and neither see
    // the window reach minRequestAmount. With it, at least one of them sees both (as with
    // Sentinel's locked LongAdder adds). Paid only on the way to a sum: a good request past
    // `enough` returned above.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return sum(tag);
  }

  /// The counts of the window containing `now_ms`.
  counts read(std::int64_t now_ms) const noexcept { return sum(tag_at(now_ms)); }

  /// Empties the window (Sentinel's resetStat when a breaker closes).
  void reset() noexcept { base_.fetch_add(1, std::memory_order_acq_rel); }

  std::int64_t interval_ms() const noexcept { return interval_ms_; }

 private:
  struct alignas(64) shard {
    std::atomic<std::uint64_t> bad{0};
    std::atomic<std::uint64_t> total{0};
  };

  std::int64_t window_of(std::int64_t t_ms) const noexcept {
    if (t_ms >= 0 && interval_ms_ < fast_limit) [[likely]] {
      return by_interval_.divide(t_ms);  // a multiply, not a 64-bit division per request
    }
    const std::int64_t w = t_ms / interval_ms_;
    return (t_ms % interval_ms_ < 0) ? w - 1 : w;  // floor, should a clock start below zero
  }
  std::uint64_t tag_at(std::int64_t t_ms) const noexcept {
    return stat::cell_tag(window_of(t_ms) + base_.load(std::memory_order_acquire));
  }

  counts sum(std::uint64_t tag) const noexcept {
    counts c;
    stat::for_each_used_shard([&](std::uint32_t i) {
      if (const shard* s = shards_.get(i)) {
        c.total += stat::cell_value(s->total.load(std::memory_order_acquire), tag);
        c.bad += stat::cell_value(s->bad.load(std::memory_order_acquire), tag);
      }
    });
    c.bad = std::min(c.bad, c.total);
    return c;
  }

  struct added {
    std::uint64_t count;  ///< the cell's count for the window afterwards; 0: a newer window
    bool moved;           ///< (CPU shard) the thread runs on another CPU now: nothing added
  };
  // Adds one for window `tag` and returns the cell's count for that window afterwards; 0 when
  // the cell already counts a newer window (this request's window is over: nothing to trip on).
  static added add(std::atomic<std::uint64_t>& cell, std::uint64_t tag, std::uint32_t index,
                   bool exclusive) noexcept {
    const auto next_of = [tag](std::uint64_t cur, std::uint64_t& next) noexcept {
      const std::uint64_t cur_tag = cur >> stat::cell_value_bits;
      if (cur != 0 && cur_tag == tag) {
        next = cur + 1;
      } else if (cur == 0 || stat::cell_tag_newer(tag, cur_tag)) {
        next = stat::cell_pack(tag, 1);
      } else {
        return false;
      }
      return true;
    };
    std::uint64_t next = 0;
    if (exclusive) {
      const stat::cpu_store r =
          stat::update_on_cpu(cell, index, [&](std::uint64_t cur, std::uint64_t& out) noexcept {
            return next_of(cur, out) && (next = out, true);
          });
      if (r == stat::cpu_store::moved) return {0, true};
      return {r == stat::cpu_store::done ? next & stat::cell_value_mask : 0, false};
    }
    std::uint64_t cur = cell.load(std::memory_order_relaxed);
    for (;;) {
      if (!next_of(cur, next)) {
        return {0, false};
      }
      if (cell.compare_exchange_weak(cur, next, std::memory_order_acq_rel,
                                     std::memory_order_relaxed)) {
        return {next & stat::cell_value_mask, false};
      }
    }
  }

  static constexpr std::int64_t fast_limit = std::int64_t{1} << 24;  // fast_divider is exact below

  std::int64_t interval_ms_;
  stat::fast_divider by_interval_{interval_ms_};
  std::atomic<std::int64_t> base_{0};  // added to window numbers; reset() advances it
  stat::shard_blocks<shard> shards_;
};

}  // namespace floodgate::detail
