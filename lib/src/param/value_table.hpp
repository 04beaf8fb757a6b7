// The bounded per-value state of one hot-parameter rule.
#pragma once

#include "param/value_key.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace floodgate::param_detail {

/** A fixed-capacity, set-associative table from value keys to per-value state (a token bucket
    word and an in-flight counter).

    Why this shape: the table must never grow (a flood of distinct values would otherwise eat
    memory), lookups of known values must be lock-free and allocation-free, and memory is
    allocated once when the rule is loaded. A key hashes to one set of `ways` slots; a lookup
    scans that set's keys (one cache line), then reads the matching value's own line. A new
    value takes a free slot of its set or evicts one with a clock (second-chance) sweep over
    the set: a slot looked up since the hand last passed is spared once, and a slot with
    entries in flight is never evicted. Recency is therefore approximate per set (LRU-ish), as
    Sentinel's LRU map is per rule.

    @par Thread Safety
    find() is lock-free and writes at most a reference bit. Inserts and evictions of one set are
    serialized by that set's spin flag, held for a few dozen instructions; a thread that cannot
    get it after a short spin gives up (the value goes untracked for that call) rather than wait.
    A request racing with the eviction of its (cold) value may touch the new value's fresh state
    once; in-flight counters are protected from that by a store/load handshake (see
    acquire_in_flight()).
*/
class value_table {
 public:
  static constexpr std::size_t ways = 8;

  /// A slot of the table; null when the value is not tracked.
  struct slot {
    std::atomic<std::uint64_t>* state = nullptr;
    std::atomic<std::int32_t>* in_flight = nullptr;
    explicit operator bool() const noexcept { return state != nullptr; }
  };

  /// Room for `capacity` values (rounded up to a multiple of `ways`).
  explicit value_table(std::size_t capacity);
  ~value_table();
  value_table(const value_table&) = delete;
  value_table& operator=(const value_table&) = delete;

  /// The slot of `key`, or null if the value has none.
  slot find(const value_key& key) noexcept;

  /** The slot of `key`, inserting the value with `initial_state` if it has none; `inserted`
      tells which. Null when no slot could be taken (set busy, or every slot of the set has
      entries in flight). */
  slot find_or_insert(const value_key& key, std::uint64_t initial_state, bool& inserted) noexcept;

  /** Counts one more entry in flight for `key` in `s` (from find_or_insert()) and returns the
      new count; 0, with nothing counted, if the slot was given to another value meanwhile. */
  std::int32_t acquire_in_flight(const value_key& key, slot s) noexcept;

  /// Values with state now; never more than capacity().
  std::size_t size() const noexcept { return size_.load(std::memory_order_relaxed); }
  std::size_t capacity() const noexcept { return set_count_ * ways; }

 private:
  static constexpr std::uint64_t empty_key = 0;
  static constexpr std::uint64_t busy_key = 1;  // being rewritten: matches no value

  // A value's own words, alone on a cache line: threads serving different values never write
  // the same line. Packed eight to a line (a set's token words together), two threads each on
  // their own 128 values ran 1.77x one thread in BM_HotKeys_ValueTableUpdate; alone, 1.96x.
  // The price: 80 bytes a value instead of 32.
  struct alignas(64) way_state {
    std::atomic<std::uint64_t> state;
    std::atomic<std::uint64_t> check;  // key.hi
    std::atomic<std::int32_t> in_flight;
    std::atomic<std::uint8_t> referenced;
  };
  // A lookup scans the key line, then reads the matching way's line, which it writes anyway.
  struct alignas(64) set {
    std::atomic<std::uint64_t> key[ways];  // key.lo; empty_key or busy_key when not a value
    alignas(64) std::atomic<bool> locked;
    std::uint8_t hand;  // clock hand; guarded by `locked`
    way_state way[ways];
  };

  set& set_of(const value_key& key) noexcept;
  /// The way of `s` holding `key`, or `ways`. Acquire pairs with the release that publishes a
  /// key after its check and state.
  static std::size_t way_of(const set& s, const value_key& key) noexcept;
  static slot slot_at(set& s, std::size_t way) noexcept {
    return {&s.way[way].state, &s.way[way].in_flight};
  }
  bool try_lock(set& s) noexcept;
  /// The way to give a new value, or `ways` if none; the set's lock is held.
  std::size_t take_victim(set& s) noexcept;

  std::size_t set_count_;
  std::unique_ptr<set[]> sets_;
  std::atomic<std::size_t> size_{0};
};

inline value_table::set& value_table::set_of(const value_key& key) noexcept {
  // Multiply-shift maps the hash onto [0, set_count_) without a power-of-two size.
  return sets_[static_cast<std::size_t>((static_cast<detail::uint128>(key.lo) * set_count_) >> 64)];
}

inline std::size_t value_table::way_of(const set& s, const value_key& key) noexcept {
  for (std::size_t w = 0; w < ways; ++w) {
    if (s.key[w].load(std::memory_order_acquire) == key.lo &&
        s.way[w].check.load(std::memory_order_relaxed) == key.hi) {
      return w;
    }
  }
  return ways;
}

inline value_table::slot value_table::find(const value_key& key) noexcept {
  set& s = set_of(key);
  const std::size_t w = way_of(s, key);
  if (w == ways) return {};
  if (s.way[w].referenced.load(std::memory_order_relaxed) == 0) {
    s.way[w].referenced.store(1, std::memory_order_relaxed);
  }
  return slot_at(s, w);
}

}  // namespace floodgate::param_detail
