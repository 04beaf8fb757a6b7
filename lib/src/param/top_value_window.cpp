#include "param/top_value_window.hpp"
#include "param/set_flag.hpp"

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace floodgate::param_detail {

namespace {

constexpr int lock_spins = 16;

struct key_hash {
  std::size_t operator()(const value_key& k) const noexcept { return k.lo ^ (k.hi * 31); }
};

}  // namespace

top_value_window::top_value_window(std::int64_t window_ms, std::size_t slots)
    : bucket_ms_(std::max<std::int64_t>(window_ms / static_cast<std::int64_t>(bucket_count), 1)),
      set_count_((std::max<std::size_t>(slots, ways) + ways - 1) / ways),
      sets_(new set[bucket_count * set_count_]),
      pending_(new pending_set[stat::shard_count() * set_count_]) {
  for (std::size_t i = 0; i < stat::shard_count() * set_count_; ++i) {
    for (auto& word : pending_[i].word) word.store(0, std::memory_order_relaxed);
  }
  for (std::size_t i = 0; i < bucket_count * set_count_; ++i) {
    set& s = sets_[i];
    s.epoch.store(-1, std::memory_order_relaxed);
    s.locked.store(false, std::memory_order_relaxed);
    for (std::size_t w = 0; w < ways; ++w) {
      s.key[w].store(empty_key, std::memory_order_relaxed);
      s.check[w].store(0, std::memory_order_relaxed);
      s.count[w].store(0, std::memory_order_relaxed);
      s.inherited[w].store(0, std::memory_order_relaxed);
      s.generation[w].store(0, std::memory_order_relaxed);
      s.length[w] = 0;
    }
  }
}

top_value_window::~top_value_window() = default;

std::size_t top_value_window::memory_bytes() const noexcept {
  return sizeof(*this) + bucket_count * set_count_ * sizeof(set) +
         stat::shard_count() * set_count_ * sizeof(pending_set);
}

bool top_value_window::try_lock(set& s) noexcept { return try_take(s.locked, lock_spins); }

void top_value_window::lock(set& s) noexcept {
  while (!try_lock(s)) {
  }
}

void top_value_window::reset(set& s, std::int64_t epoch) noexcept {
  for (std::size_t w = 0; w < ways; ++w) {
    s.key[w].store(empty_key, std::memory_order_relaxed);
    s.count[w].store(0, std::memory_order_relaxed);
  }
  s.epoch.store(epoch, std::memory_order_release);  // publishes the emptied slots
}

void top_value_window::add(std::size_t first, std::size_t second, std::int64_t epoch,
                           const value_key& key, std::string_view text) noexcept {
  set& a = set_at(epoch, first);
  set& b = set_at(epoch, second);
  if (!try_lock(a)) [[unlikely]] {
    skipped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (&b != &a && !try_lock(b)) [[unlikely]] {
    unlock(a);
    skipped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // A set of a newer bucket means this time has left the window; otherwise both sets hold
  // this bucket, emptied first if they still hold an older one.
  if (a.epoch.load(std::memory_order_relaxed) <= epoch &&
      b.epoch.load(std::memory_order_relaxed) <= epoch) {
    for (set* s : {&a, &b}) {
      if (s->epoch.load(std::memory_order_relaxed) < epoch) reset(*s, epoch);
    }
    insert(first, second, epoch, key, text);
  }
  if (&b != &a) unlock(b);
  unlock(a);
}

void top_value_window::insert(std::size_t first, std::size_t second, std::int64_t epoch,
                              const value_key& key, std::string_view text) noexcept {
  // Inserts into these sets are serialized: a second look finds a value another thread added.
  for (const std::size_t index : {first, second}) {
    set& s = set_at(epoch, index);
    const std::size_t w = way_of(s, key);
    if (w != ways) {
      s.count[w].fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  // Where the newcomer goes: the first set while it has two free slots or more (most values
  // stay one probe away), else the set with more free slots (the first on a tie), so that a
  // set fills up only when its value's other set is nearly full too; both full, the smallest
  // slot of the two (Space-Saving).
  struct candidate {
    std::size_t index;
    std::size_t free = 0;
    std::size_t free_way = ways;
    std::size_t smallest_way = ways;
    std::uint32_t smallest = 0;
  };
  candidate c[2] = {{first}, {second}};
  for (candidate& k : c) {
    const set& s = set_at(epoch, k.index);
    for (std::size_t w = 0; w < ways; ++w) {
      if (s.key[w].load(std::memory_order_relaxed) == empty_key) {
        if (k.free++ == 0) k.free_way = w;
        continue;
      }
      const auto n = static_cast<std::uint32_t>(s.count[w].load(std::memory_order_relaxed) +
                                                pending(k.index, w, epoch, s));
      if (k.smallest_way == ways || n < k.smallest) {
        k.smallest_way = w;
        k.smallest = n;
      }
    }
  }
  const candidate* chosen = &c[0];
  std::size_t victim = c[0].free_way;
  std::uint32_t smallest = 0;
  if (c[0].free < 2 && c[1].free > c[0].free) {
    chosen = &c[1];
    victim = c[1].free_way;
  } else if (c[0].free == 0) {  // both full
    if (c[1].smallest < c[0].smallest) chosen = &c[1];
    victim = chosen->smallest_way;
    smallest = chosen->smallest;
  }
  const std::size_t victim_index = chosen->index;
  set& s = set_at(epoch, victim_index);
  // Space-Saving: the newcomer inherits the smallest count, plus its own request. The new
  // generation tells the shards' pending requests of the old value from the newcomer's.
  s.key[victim].store(busy_key, std::memory_order_relaxed);
  s.generation[victim].store(
      static_cast<std::uint8_t>(s.generation[victim].load(std::memory_order_relaxed) + 1),
      std::memory_order_release);
  s.check[victim].store(key.hi, std::memory_order_relaxed);
  std::size_t n = std::min(text.size(), text_room);
  // A cut value ends at a character boundary: never half of a UTF-8 sequence.
  while (n < text.size() && n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  std::memcpy(s.text[victim], text.data(), n);
  s.length[victim] = static_cast<std::uint8_t>(n);
  s.count[victim].store(smallest + 1, std::memory_order_relaxed);
  s.inherited[victim].store(smallest, std::memory_order_relaxed);
  s.key[victim].store(key.lo, std::memory_order_release);
}

void top_value_window::settle(std::uint64_t word, std::size_t index, std::size_t way,
                              std::int64_t epoch) noexcept {
  const std::uint64_t n = word & pending_count_mask;
  if (n == 0) return;
  // The word's epoch: the latest one at or before `epoch` with the same low 16 bits.
  const auto behind =
      static_cast<std::int64_t>((static_cast<std::uint64_t>(epoch) - (word >> 48)) & 0xffff);
  if (behind == 0) return;  // this epoch, an older generation: its value was replaced
  const std::int64_t then = epoch - behind;
  if (then < 0 || behind >= static_cast<std::int64_t>(bucket_count)) return;  // left the window
  set& s = set_at(then, index);
  const auto generation = static_cast<std::uint8_t>(word >> 32);
  if (s.epoch.load(std::memory_order_acquire) == then &&
      s.generation[way].load(std::memory_order_acquire) == generation) {
    s.count[way].fetch_add(static_cast<std::uint32_t>(n), std::memory_order_relaxed);
  }
}

std::uint64_t top_value_window::pending(std::size_t index, std::size_t way, std::int64_t epoch,
                                        const set& s) const noexcept {
  const std::uint64_t tag = pending_tag(epoch, s.generation[way].load(std::memory_order_acquire));
  std::uint64_t total = 0;
  // Only a thread holding a CPU's shard counts in it, and that shard is in used_shards().
  stat::for_each_used_shard([&](std::uint32_t shard) {
    const std::uint64_t p =
        pending_[shard * set_count_ + index].word[way].load(std::memory_order_relaxed);
    if ((p & ~pending_count_mask) == tag) total += p & pending_count_mask;
  });
  return total;
}

top_value_window::counts top_value_window::tally(const value_key& key,
                                                 std::int64_t now_ms) const noexcept {
  const std::int64_t newest = now_ms / bucket_ms_;
  counts total;
  for (std::int64_t epoch = newest - static_cast<std::int64_t>(bucket_count) + 1; epoch <= newest;
       ++epoch) {
    if (epoch < 0) continue;
    for (const std::size_t index : {first_index(key), second_index(key)}) {
      const set& s = set_at(epoch, index);
      if (s.epoch.load(std::memory_order_acquire) != epoch) continue;
      const std::size_t w = way_of(s, key);
      if (w != ways) {
        // Read apart from the count: a slot just retaken can show the newcomer's epsilon with
        // less than it, so the error is capped at the count.
        const std::uint64_t n =
            s.count[w].load(std::memory_order_relaxed) + pending(index, w, epoch, s);
        total.count += n;
        total.error += std::min<std::uint64_t>(s.inherited[w].load(std::memory_order_relaxed), n);
        break;  // a value is in one of its sets
      }
    }
  }
  return total;
}

std::vector<top_value_window::counted> top_value_window::values(std::int64_t now_ms) const {
  const std::int64_t newest = now_ms / bucket_ms_;
  std::unordered_map<value_key, counted, key_hash> merged;
  const auto buckets = static_cast<std::int64_t>(bucket_count);
  for (std::int64_t epoch = std::max<std::int64_t>(newest - buckets + 1, 0); epoch <= newest;
       ++epoch) {
    const std::size_t bucket = static_cast<std::size_t>(epoch) % bucket_count;
    for (std::size_t i = 0; i < set_count_; ++i) {
      set& s = sets_[bucket * set_count_ + i];
      if (s.epoch.load(std::memory_order_acquire) != epoch) continue;
      lock(s);
      if (s.epoch.load(std::memory_order_relaxed) == epoch) {
        for (std::size_t w = 0; w < ways; ++w) {
          const value_key key{s.key[w].load(std::memory_order_relaxed),
                              s.check[w].load(std::memory_order_relaxed)};
          if (key.lo == empty_key || key.lo == busy_key) continue;
          counted& c = merged[key];
          if (c.count == 0) {
            c.key = key;
            c.text.assign(s.text[w], s.length[w]);
          }
          const std::uint64_t n =
              s.count[w].load(std::memory_order_relaxed) + pending(i, w, epoch, s);
          c.count += n;
          c.error += std::min<std::uint64_t>(s.inherited[w].load(std::memory_order_relaxed), n);
        }
      }
      unlock(s);
    }
  }
  std::vector<counted> out;
  out.reserve(merged.size());
  for (auto& [key, c] : merged) {
    if (c.count > 0) out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(), [](const counted& a, const counted& b) {
    return a.count != b.count ? a.count > b.count : a.text < b.text;
  });
  return out;
}

}  // namespace floodgate::param_detail
