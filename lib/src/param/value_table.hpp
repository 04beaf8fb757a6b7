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
    allocated once when the rule is loaded. A key hashes to one set of `ways` slots and, within
    it, to a home way. A value's own cache line holds its key, its token word and its in-flight
    count. A lookup reads the home way's line first and is done when the value lives there (the
    usual case: a new value takes its home way when that is free). Otherwise it scans the set's
    key line (a copy of the keys, for the scan) and reads the matching value's line. A new value
    takes a free slot of its set or evicts one with a clock (second-chance) sweep over the set:
    a slot looked up since the hand last passed is spared once (a new value counts as looked up
    only from its second lookup on, so a flood of values seen once evicts its own kind, not a
    value in use), and a slot with entries in flight is never evicted. Recency is therefore
   approximate per set (LRU-ish), as Sentinel's LRU map is per rule.

    Why the home way: two threads serving different values read no common line unless their
    values share a home way. When every lookup scanned the key line, two threads on 128 values
    each (BM_HotKeys_ParamRuleUntracked) shared a key line for about a fifth of their values, and
    in some phases of the 2-vCPU VM this ran 1.3-1.6x one thread at two threads, where a table 50
    times sparser ran 1.8-1.9x. The price: a value whose home another value holds reads that
    value's line, which its thread writes on every request. A whole entry pays that less than the
    shared key lines (above); a loop doing nothing but lookups (BM_HotKeys_ValueTableUpdate)
    pays it on every pass and no longer gains from a second thread (bench/RESULTS.md).

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

  /// The way of its set that `key` takes when that way is free, and that lookups read first.
  static std::size_t home_way(const value_key& key) noexcept {
    return static_cast<std::size_t>(key.hi >> 61);  // the top bits: ways == 8
  }

  /// Values with state now; never more than capacity().
  std::size_t size() const noexcept { return size_.load(std::memory_order_relaxed); }
  std::size_t capacity() const noexcept { return set_count_ * ways; }

 private:
  static constexpr std::uint64_t empty_key = 0;
  static constexpr std::uint64_t busy_key = 1;  // being rewritten: matches no value

  // A value's key and words, alone on a cache line: threads serving different values never
  // write the same line. Packed eight to a line (a set's token words together), two threads
  // each on their own 128 values ran 1.77x one thread in BM_HotKeys_ValueTableUpdate; alone,
  // 1.96x. The price: 80 bytes a value instead of 32.
  struct alignas(64) way_state {
    std::atomic<std::uint64_t> lo;  // key.lo, the key's truth; empty_key or busy_key when none
    std::atomic<std::uint64_t> hi;  // key.hi
    std::atomic<std::uint64_t> state;
    std::atomic<std::int32_t> in_flight;
    std::atomic<std::uint8_t> referenced;
  };
  static_assert(ways == 8, "home_way() takes three bits");
  struct alignas(64) set {
    // A copy of the ways' key.lo for lookups that miss the home way; written with them, under
    // `locked`.
    std::atomic<std::uint64_t> key[ways];
    alignas(64) std::atomic<bool> locked;
    std::uint8_t hand;  // clock hand; guarded by `locked`
    way_state way[ways];
  };

  set& set_of(const value_key& key) noexcept;
  /// Whether `w` holds `key`. Acquire pairs with the release that publishes a key after its
  /// state; acquire_in_flight() reads `lo` seq_cst instead.
  static bool holds(const way_state& w, const value_key& key,
                    std::memory_order lo_order = std::memory_order_acquire) noexcept {
    return w.lo.load(lo_order) == key.lo && w.hi.load(std::memory_order_relaxed) == key.hi;
  }
  /// The way of `s` holding `key`, or `ways`: the home way, else a scan of the key line.
  static std::size_t way_of(const set& s, const value_key& key) noexcept;
  static slot slot_at(set& s, std::size_t way) noexcept {
    return {&s.way[way].state, &s.way[way].in_flight};
  }
  bool try_lock(set& s) noexcept;
  /// The way to give `key`, a new value, or `ways` if none; the set's lock is held.
  std::size_t take_victim(set& s, const value_key& key) noexcept;

  std::size_t set_count_;
  std::unique_ptr<set[]> sets_;
  std::atomic<std::size_t> size_{0};
};

inline value_table::set& value_table::set_of(const value_key& key) noexcept {
  // Multiply-shift maps the hash onto [0, set_count_) without a power-of-two size.
  return sets_[static_cast<std::size_t>((static_cast<detail::uint128>(key.lo) * set_count_) >> 64)];
}

inline std::size_t value_table::way_of(const set& s, const value_key& key) noexcept {
  const std::size_t home = home_way(key);
  if (holds(s.way[home], key)) [[likely]] {
    return home;
  }
  for (std::size_t w = 0; w < ways; ++w) {
    if (w != home && s.key[w].load(std::memory_order_relaxed) == key.lo && holds(s.way[w], key)) {
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
