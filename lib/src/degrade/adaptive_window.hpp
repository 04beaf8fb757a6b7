// The statistics an adaptive breaker decides on: requests and accepts over a rolling window.
#pragma once

#include "stat/leap_array.hpp"
#include "stat/tagged_cell.hpp"
#include "stat/writer_shard.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

namespace floodgate::detail {

/** Counts requests and accepts over the last `interval_ms`, in a ring of equal buckets: the
    largest whole number of milliseconds dividing `interval_ms` into at most 40 buckets (go-zero's
    10 s in 40 buckets of 250 ms; any multiple of 40 ms gets 40). The window at time t is the
    bucket holding t and the buckets before it, `interval_ms` in all: it slides by one bucket at
    a time, so an old burst leaves the window a bucket at a time instead of all at once as in a
    tumbling window, and a bucket is at most 1/40 of the interval.

    Counts are kept per writer shard (stat/writer_shard.hpp) in tagged cells
    (stat/tagged_cell.hpp): a thread updates its CPU's cache lines with a compare-and-store on
    the CPU (no lock prefix), and a new bucket replaces the old counts of its slot without a reset step.

    @par Thread Safety
    Any number of concurrent writers and readers. A read is not one snapshot of every shard:
    `accepts` is clamped to `requests`.
*/
class adaptive_window {
 public:
  static constexpr std::int32_t max_buckets = 40;

  struct counts {
    std::uint64_t requests = 0;
    std::uint64_t accepts = 0;
  };

  /// `interval_ms` > 0.
  explicit adaptive_window(std::int32_t interval_ms)
      : buckets_(bucket_count_for(interval_ms)),
        bucket_ms_(interval_ms / buckets_),
        by_bucket_(bucket_ms_),
        by_count_(buckets_),
        lines_per_ring_(static_cast<std::size_t>((buckets_ + line_buckets - 1) / line_buckets)),
        lines_(new ring_line[lines_per_ring_ * stat::shard_count()]) {}

  /// The largest divisor of `interval_ms` that is at most max_buckets.
  static constexpr std::int32_t bucket_count_for(std::int32_t interval_ms) noexcept {
    for (std::int32_t n = std::min(max_buckets, std::max(interval_ms, 1)); n > 1; --n) {
      if (interval_ms % n == 0) {
        return n;
      }
    }
    return 1;
  }

  std::int32_t bucket_count() const noexcept { return buckets_; }
  std::int32_t bucket_ms() const noexcept { return bucket_ms_; }
  /// The number of the bucket holding `now_ms` (>= 0).
  std::int64_t bucket_of(std::int64_t now_ms) const noexcept { return by_bucket_.divide(now_ms); }

  /// Counts one request at `now_ms` whose outcome is known: completed (`accepted` when it was
  /// not an error) or dropped (never accepted).
  void record(std::int64_t now_ms, bool accepted) noexcept {
    const std::int64_t b = bucket_of(now_ms);
    const std::uint64_t tag = stat::cell_tag(b);
    const stat::writer_shard ws = stat::this_thread_shard();
    add(ws, b, tag, &bucket::requests);
    if (accepted) add(ws, b, tag, &bucket::accepts);
  }

  /// The counts of the window ending with the bucket that holds `now_ms`.
  counts read(std::int64_t now_ms) const noexcept {
    counts c;
    const std::int64_t current = bucket_of(now_ms);
    for (std::int64_t b = std::max<std::int64_t>(current - buckets_ + 1, 0); b <= current; ++b) {
      const std::uint64_t tag = stat::cell_tag(b);
      stat::for_each_used_shard([&](std::uint32_t shard) {
        const bucket& cell = slot(shard, b);
        c.requests += stat::cell_value(cell.requests.load(std::memory_order_relaxed), tag);
        c.accepts += stat::cell_value(cell.accepts.load(std::memory_order_relaxed), tag);
      });
    }
    c.accepts = std::min(c.accepts, c.requests);
    return c;
  }

 private:
  struct bucket {
    std::atomic<std::uint64_t> requests{0};
    std::atomic<std::uint64_t> accepts{0};
  };
  static constexpr std::int32_t line_buckets = 8;
  // Each shard's ring starts on its own 128-byte boundary: no two shards share a line.
  struct alignas(128) ring_line {
    bucket buckets[line_buckets];
  };

  /// Adds one to `field` of bucket `b` in `ws`'s ring, or the shared ring once the thread runs
  /// on another CPU than `ws`'s.
  void add(stat::writer_shard ws, std::int64_t b, std::uint64_t tag,
           std::atomic<std::uint64_t> bucket::*field) noexcept {
    if (ws.exclusive && !stat::cell_add_on_cpu(slot(ws.index, b).*field, tag, 1, ws.index).moved)
        [[likely]] {
      return;
    }
    stat::cell_add(slot(0, b).*field, tag, 1);  // shard 0: shared
  }

  bucket& slot(std::uint32_t shard, std::int64_t b) const noexcept {
    const auto s = static_cast<std::size_t>(by_count_.modulo(b));
    return lines_[shard * lines_per_ring_ + s / line_buckets].buckets[s % line_buckets];
  }

  std::int32_t buckets_;
  std::int32_t bucket_ms_;
  stat::fast_divider by_bucket_;
  stat::fast_divider by_count_;
  std::size_t lines_per_ring_;
  std::unique_ptr<ring_line[]> lines_;
};

}  // namespace floodgate::detail
