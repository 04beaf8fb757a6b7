// LeapArray: a sliding window made of a ring of buckets, as in Sentinel.
#pragma once

#include "stat/tagged_cell.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace floodgate::stat {

__extension__ using uint128 = unsigned __int128;

/** Division of non-negative 64-bit values below 2^40 by a constant fixed at run time, as a
    multiply and a shift: windows divide the time on every request. Exact for d < 2^24. */
class fast_divider {
 public:
  explicit fast_divider(std::int64_t d) noexcept
      : d_(d), inverse_(d > 1 ? ~std::uint64_t{0} / static_cast<std::uint64_t>(d) + 1 : 0) {}

  std::int64_t divide(std::int64_t t) const noexcept {
    if (d_ == 1) {
      return t;
    }
    if (t < 0 || t >= (std::int64_t{1} << 40)) {
      return t / d_;
    }
    return static_cast<std::int64_t>(
        (static_cast<uint128>(static_cast<std::uint64_t>(t)) * inverse_) >> 64);
  }
  std::int64_t modulo(std::int64_t t) const noexcept { return t - divide(t) * d_; }

 private:
  std::int64_t d_;
  std::uint64_t inverse_;
};

/** The arithmetic of a sliding window of `sample_count` buckets covering `interval_ms`: which
    window number a time falls in and which ring slot holds it. @ref leap_array adds the storage;
    a statistic node keeps its rings elsewhere (one per writer shard, created on first write).

    Window `w` covers `[w * window_ms, (w + 1) * window_ms)`. At time `t` the valid windows are
    the `sample_count` windows ending with the one containing `t` (Sentinel's `values(t)` after
    `currentWindow(t)`).
*/
class window_geometry {
 public:
  window_geometry(int sample_count, int interval_ms)
      : sample_count_(sample_count),
        interval_ms_(interval_ms),
        window_ms_(interval_ms / sample_count),
        by_window_(window_ms_),
        by_samples_(sample_count) {}

  int sample_count() const noexcept { return sample_count_; }
  int interval_ms() const noexcept { return interval_ms_; }
  int window_ms() const noexcept { return window_ms_; }
  /// Divides a time by window_ms() (window_of without the call).
  const fast_divider& window_divider() const noexcept { return by_window_; }
  double interval_sec() const noexcept { return interval_ms_ / 1000.0; }

  std::int64_t window_of(std::int64_t t_ms) const noexcept { return by_window_.divide(t_ms); }
  std::int64_t window_start(std::int64_t t_ms) const noexcept {
    return t_ms - by_window_.modulo(t_ms);
  }
  /// The ring slot of window `window`.
  std::size_t slot(std::int64_t window) const noexcept {
    return static_cast<std::size_t>(by_samples_.modulo(window));
  }
  /** Calls `f(std::uint64_t tag, std::int64_t window)` for each window of the interval ending
      at `t_ms`, oldest first. */
  template <class F>
  void for_each_window_number(std::int64_t t_ms, F&& f) const {
    if (t_ms < 0) {
      return;
    }
    const std::int64_t cur = window_of(t_ms);
    for (std::int64_t w = cur - sample_count_ + 1; w <= cur; ++w) {
      if (w >= 0) {
        f(cell_tag(w), w);
      }
    }
  }

 private:
  int sample_count_;
  int interval_ms_;
  int window_ms_;
  fast_divider by_window_;
  fast_divider by_samples_;
};

/** A sliding window of `sample_count` buckets covering `interval_ms` (see window_geometry).

    `Bucket` is any type whose counters are @ref tagged_cell words; the array maps a time to its
    window number and ring slot, and tells readers which windows are inside the interval. There is
    no reset step: a write for a newer window replaces a cell's stale value (see tagged_cell.hpp),
    so buckets never need a lock, and readers skip every cell whose window is not the one expected
    in that slot — deprecated buckets are never included.

    @par Thread Safety
    Any number of concurrent writers and readers.
*/
template <class Bucket>
class leap_array : public window_geometry {
 public:
  /// `copies` independent rings of the same shape share one allocation.
  leap_array(int sample_count, int interval_ms, int copies = 1)
      : window_geometry(sample_count, interval_ms),
        copies_(static_cast<std::uint32_t>(copies)),
        buckets_(
            new Bucket[static_cast<std::size_t>(sample_count) * static_cast<std::size_t>(copies)]) {
  }

  std::uint32_t copies() const noexcept { return copies_; }

  Bucket& bucket(std::int64_t window) noexcept { return buckets_[slot(window)]; }
  const Bucket& bucket(std::int64_t window) const noexcept { return buckets_[slot(window)]; }
  /// Position of (window, copy) in the bucket storage, for at().
  std::size_t index(std::int64_t window, std::uint32_t copy) const noexcept {
    return copy * static_cast<std::size_t>(sample_count()) + slot(window);
  }
  /// Position of the first bucket of ring `copy`.
  std::size_t ring_start(std::uint32_t copy) const noexcept {
    return copy * static_cast<std::size_t>(sample_count());
  }
  Bucket& at(std::size_t index) noexcept { return buckets_[index]; }
  const Bucket& at(std::size_t index) const noexcept { return buckets_[index]; }

  Bucket& bucket(std::int64_t window, std::uint32_t copy) noexcept {
    return buckets_[index(window, copy)];
  }
  const Bucket& bucket(std::int64_t window, std::uint32_t copy) const noexcept {
    return buckets_[index(window, copy)];
  }

  /** Calls `f(const Bucket&, std::uint64_t tag, std::int64_t window)` for each window of the
      interval ending at `t_ms`, oldest first. */
  template <class F>
  void for_each_window(std::int64_t t_ms, F&& f) const {
    for_each_window_number(t_ms, [&](std::uint64_t tag, std::int64_t w) { f(bucket(w), tag, w); });
  }

 private:
  std::uint32_t copies_;
  std::unique_ptr<Bucket[]> buckets_;
};

}  // namespace floodgate::stat
