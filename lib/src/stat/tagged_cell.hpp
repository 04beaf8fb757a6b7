// A counter cell that carries the number of the window it counts for.
//
// This is what makes floodgate's LeapArray lock-free and exact without ever resetting a bucket:
// each 64-bit cell holds `tag` (the window number, modulo 2^24) in its high bits and the count
// in its low 40 bits. A writer for window w adds to the cell if it already holds w, replaces it
// if it holds an older window (the implicit reset), and drops the event if the cell already holds
// a newer window: that only happens to a writer whose window has left the sliding interval, so no
// read could have included the event anyway. Readers take a cell's value only when its tag is the
// window they expect in that slot. No half-reset bucket is ever visible, nothing spins on a lock,
// and a clock that goes backwards (a writer that stalled) by up to cell_tag_lead windows cannot
// corrupt newer windows.
//
// A tag repeats after 2^24 windows (97 days of 500 ms windows): a slot left untouched for exactly
// a multiple of that period would be read as current for one window. A cell counts as holding a
// newer window than a writer's only when it is at most cell_tag_lead windows ahead of it (a late
// writer); anything else is older, however the tags compare modulo 2^24.
#pragma once

#include "stat/writer_shard.hpp"

#include <atomic>
#include <cstdint>

namespace floodgate::stat {

inline constexpr unsigned cell_value_bits = 40;
inline constexpr std::uint64_t cell_value_mask = (std::uint64_t{1} << cell_value_bits) - 1;
inline constexpr std::uint64_t cell_tag_mask = (std::uint64_t{1} << (64 - cell_value_bits)) - 1;

/// The tag of window number `window`.
constexpr std::uint64_t cell_tag(std::int64_t window) noexcept {
  return static_cast<std::uint64_t>(window) & cell_tag_mask;
}

constexpr std::uint64_t cell_pack(std::uint64_t tag, std::uint64_t value) noexcept {
  return (tag << cell_value_bits) | (value & cell_value_mask);
}

/** How many windows a cell may be ahead of a writer and still count as a later window (the
    writer read the clock before another thread and wrote after it): 2^16, nine hours of 500 ms
    windows, a minute of 1 ms ones. Any other tag is an older window. Serial-number arithmetic's
    half of the range (2^23) made every cell left idle for 2^23 to 2^24 windows (48.5 to 97 days
    of 500 ms windows, 2.3 to 4.7 hours of 1 ms breaker windows) look ahead of every writer: a
    QPS rule refused everything and breakers stopped counting until the tags came round again.
    Now that can happen only to a cell idle for 2^24 - cell_tag_lead windows and up to 2^24 (a
    band of 0.4 % of the cycle), and for at most cell_tag_lead windows. */
inline constexpr std::uint64_t cell_tag_lead = std::uint64_t{1} << 16;

/// True when tag `a` is a later window than tag `b`: `b` is not 1 to cell_tag_lead windows
/// ahead of `a` (modulo 2^24).
constexpr bool cell_tag_newer(std::uint64_t a, std::uint64_t b) noexcept {
  return a != b && ((b - a) & cell_tag_mask) > cell_tag_lead;
}

/// True when a cell of tag `b` holds a window 1 to cell_tag_lead windows after tag `a`.
constexpr bool cell_tag_ahead(std::uint64_t b, std::uint64_t a) noexcept {
  return a != b && !cell_tag_newer(a, b);
}

/// The value of `word` for window tag `tag`, or 0 when the cell holds another window.
constexpr std::uint64_t cell_value(std::uint64_t word, std::uint64_t tag) noexcept {
  return (word != 0 && (word >> cell_value_bits) == tag) ? (word & cell_value_mask) : 0;
}

/// Adds `n` to the cell for window tag `tag`.
inline void cell_add(std::atomic<std::uint64_t>& cell, std::uint64_t tag, std::uint64_t n) noexcept {
  std::uint64_t cur = cell.load(std::memory_order_relaxed);
  for (;;) {
    std::uint64_t next;
    const std::uint64_t cur_tag = cur >> cell_value_bits;
    if (cur != 0 && cur_tag == tag) {
      next = cur + n;
    } else if (cur == 0 || cell_tag_newer(tag, cur_tag)) {
      next = cell_pack(tag, n);
    } else {
      return;  // our window already left the interval; see the file comment
    }
    if (cell.compare_exchange_weak(cur, next, std::memory_order_relaxed)) {
      return;
    }
  }
}

/// What cell_add_displacing did besides adding.
struct cell_add_result {
  std::uint64_t displaced = 0;  ///< the older window's word this call replaced, or 0
  bool rejected = false;        ///< the cell already holds a newer window: nothing was added
  bool moved = false;  ///< (on a CPU shard) the thread runs on another CPU now: nothing was added
};

/** Like cell_add, but reports the word it displaced when it replaced an older window's value.
    Only the thread whose CAS displaced it sees that final value, so the caller can carry it
    elsewhere exactly once; likewise a rejected (late) event can be carried by its caller. */
inline cell_add_result cell_add_displacing(std::atomic<std::uint64_t>& cell, std::uint64_t tag,
                                           std::uint64_t n) noexcept {
  std::uint64_t cur = cell.load(std::memory_order_relaxed);
  for (;;) {
    std::uint64_t next;
    const std::uint64_t cur_tag = cur >> cell_value_bits;
    const bool same = cur != 0 && cur_tag == tag;
    if (same) {
      next = cur + n;
    } else if (cur == 0 || cell_tag_newer(tag, cur_tag)) {
      next = cell_pack(tag, n);
    } else {
      return {0, true};
    }
    if (cell.compare_exchange_weak(cur, next, std::memory_order_relaxed)) {
      return {same ? 0 : cur, false};
    }
  }
}

/** cell_add_displacing for a word of CPU shard `shard` (see writer_shard.hpp): the same outcome
    with a compare-and-store on that CPU instead of a CAS, or `moved` (nothing added) when the
    thread runs on another CPU now. */
inline cell_add_result cell_add_on_cpu(std::atomic<std::uint64_t>& cell, std::uint64_t tag,
                                       std::uint64_t n, std::uint32_t shard) noexcept {
  cell_add_result result;
  const cpu_store r = update_on_cpu(cell, shard, [&](std::uint64_t cur, std::uint64_t& next) {
    const std::uint64_t cur_tag = cur >> cell_value_bits;
    result = {};
    if (cur != 0 && cur_tag == tag) {
      next = cur + n;
    } else if (cur == 0 || cell_tag_newer(tag, cur_tag)) {
      next = cell_pack(tag, n);
      result.displaced = cur;
    } else {
      result.rejected = true;
      return false;
    }
    return true;
  });
  if (r == cpu_store::moved) {
    return {0, false, true};
  }
  return result;
}

/// cell_min for a word of CPU shard `shard`; false (nothing done) when the thread runs on
/// another CPU now.
inline bool cell_min_on_cpu(std::atomic<std::uint64_t>& cell, std::uint64_t tag,
                            std::uint64_t v, std::uint32_t shard) noexcept {
  return update_on_cpu(cell, shard, [&](std::uint64_t cur, std::uint64_t& next) {
           const std::uint64_t cur_tag = cur >> cell_value_bits;
           next = cell_pack(tag, v);
           return cur != 0 && cur_tag == tag ? (cur & cell_value_mask) > v
                                             : (cur == 0 || cell_tag_newer(tag, cur_tag));
         }) != cpu_store::moved;
}

/// Lowers the cell to `v` for window tag `tag` if `v` is smaller than what it holds.
inline void cell_min(std::atomic<std::uint64_t>& cell, std::uint64_t tag, std::uint64_t v) noexcept {
  std::uint64_t cur = cell.load(std::memory_order_relaxed);
  for (;;) {
    const std::uint64_t cur_tag = cur >> cell_value_bits;
    if (cur != 0 && cur_tag == tag) {
      if ((cur & cell_value_mask) <= v) {
        return;
      }
    } else if (cur != 0 && !cell_tag_newer(tag, cur_tag)) {
      return;
    }
    if (cell.compare_exchange_weak(cur, cell_pack(tag, v), std::memory_order_relaxed)) {
      return;
    }
  }
}

}  // namespace floodgate::stat
