#include "param/value_table.hpp"
#include "param/set_flag.hpp"

#include <cstddef>

namespace floodgate::param_detail {

namespace {

constexpr int lock_spins = 64;

}  // namespace

value_table::value_table(std::size_t capacity)
    : set_count_((std::max<std::size_t>(capacity, 1) + ways - 1) / ways),
      sets_(new set[set_count_]) {
  for (std::size_t i = 0; i < set_count_; ++i) {
    set& s = sets_[i];
    for (std::size_t w = 0; w < ways; ++w) {
      s.key[w].store(empty_key, std::memory_order_relaxed);
      s.way[w].lo.store(empty_key, std::memory_order_relaxed);
      s.way[w].hi.store(0, std::memory_order_relaxed);
      s.way[w].state.store(0, std::memory_order_relaxed);
      s.way[w].in_flight.store(0, std::memory_order_relaxed);
      s.way[w].referenced.store(0, std::memory_order_relaxed);
    }
    s.locked.store(false, std::memory_order_relaxed);
    s.hand = 0;
  }
}

value_table::~value_table() = default;

bool value_table::try_lock(set& s) noexcept { return try_take(s.locked, lock_spins); }

std::size_t value_table::take_victim(set& s, const value_key& key) noexcept {
  // The home way if free, so that lookups of the value read one line; else any free way.
  const std::size_t home = home_way(key);
  for (std::size_t i = 0; i < ways; ++i) {
    const std::size_t w = (home + i) % ways;
    if (s.key[w].load(std::memory_order_relaxed) == empty_key) {
      size_.fetch_add(1, std::memory_order_relaxed);
      return w;
    }
  }
  // Two turns of the hand: the first may only clear reference bits.
  for (std::size_t i = 0; i < 2 * ways; ++i) {
    const std::size_t w = s.hand;
    s.hand = static_cast<std::uint8_t>((w + 1) % ways);
    if (s.way[w].in_flight.load(std::memory_order_relaxed) != 0) continue;
    if (s.way[w].referenced.load(std::memory_order_relaxed) != 0) {
      s.way[w].referenced.store(0, std::memory_order_relaxed);
      continue;
    }
    // Hide the old value first, then make sure no entry counted itself in meanwhile; pairs
    // with acquire_in_flight(), which counts first and then re-reads the key.
    const std::uint64_t old = s.way[w].lo.load(std::memory_order_relaxed);
    s.way[w].lo.store(busy_key, std::memory_order_seq_cst);
    if (s.way[w].in_flight.load(std::memory_order_seq_cst) != 0) {
      s.way[w].lo.store(old, std::memory_order_release);
      continue;
    }
    return w;  // the caller rewrites s.key[w] with the new value's key
  }
  return ways;
}

value_table::slot value_table::find_or_insert(const value_key& key, std::uint64_t initial_state,
                                              bool& inserted) noexcept {
  inserted = false;
  if (auto found = find(key)) return found;
  set& s = set_of(key);
  if (!try_lock(s)) return {};
  // Inserts into this set are serialized: a second look finds a value another thread just added.
  if (const std::size_t found = way_of(s, key); found != ways) {
    s.locked.store(false, std::memory_order_release);
    return slot_at(s, found);
  }
  const std::size_t w = take_victim(s, key);
  if (w == ways) {
    s.locked.store(false, std::memory_order_release);
    return {};
  }
  s.way[w].hi.store(key.hi, std::memory_order_relaxed);
  s.way[w].state.store(initial_state, std::memory_order_relaxed);
  // Unreferenced until it is looked up again: values seen once (a flood of distinct ones) go
  // first, and the hand passes a value in use without taking it. Inserted referenced, a set
  // of new values had every bit set, the hand cleared them all in one turn and took whatever
  // it pointed at, a value in use included (its limit then started over).
  s.way[w].referenced.store(0, std::memory_order_relaxed);
  s.way[w].lo.store(key.lo, std::memory_order_release);
  s.key[w].store(key.lo, std::memory_order_relaxed);
  s.locked.store(false, std::memory_order_release);
  inserted = true;
  return slot_at(s, w);
}

std::int32_t value_table::acquire_in_flight(const value_key& key, slot sl) noexcept {
  const std::int32_t count = sl.in_flight->fetch_add(1, std::memory_order_seq_cst) + 1;
  // Re-read the key from the slot's own line: an eviction hides it before checking the count.
  const auto* w = reinterpret_cast<const way_state*>(reinterpret_cast<const char*>(sl.in_flight) -
                                                     offsetof(way_state, in_flight));
  if (holds(*w, key, std::memory_order_seq_cst)) return count;
  sl.in_flight->fetch_sub(1, std::memory_order_relaxed);
  return 0;
}

}  // namespace floodgate::param_detail
