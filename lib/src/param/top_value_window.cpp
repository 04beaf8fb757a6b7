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

bool top_value_window::try_lock(set& s) noexcept {
  return try_take(s.locked, lock_spins);
}

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

void top_value_window::insert(set& s, std::size_t index, std::int64_t epoch, const value_key& key,
                              std::string_view text) noexcept {
  std::size_t victim = ways;
  std::uint32_t smallest = 0;
  for (std::size_t w = 0; w < ways; ++w) {
    const std::uint64_t k = s.key[w].load(std::memory_order_relaxed);
    if (k == key.lo && s.check[w].load(std::memory_order_relaxed) == key.hi) {
      s.count[w].fetch_add(1, std::memory_order_relaxed);  // inserted by another thread
      return;
    }
    if (k == empty_key) {
      if (victim == ways || smallest != 0) {
        victim = w;
        smallest = 0;
      }
      continue;
    }
    const auto c = static_cast<std::uint32_t>(s.count[w].load(std::memory_order_relaxed) +
                                              pending(index, w, epoch, s));
    if (victim == ways || c < smallest) {
      victim = w;
      smallest = c;
    }
  }
  // Space-Saving: the newcomer inherits the smallest count, plus its own request. The new
  // generation tells the shards' pending requests of the old value from the newcomer's.
  s.key[victim].store(busy_key, std::memory_order_relaxed);
  s.generation[victim].store(static_cast<std::uint8_t>(s.generation[victim].load(
                                 std::memory_order_relaxed) + 1),
                             std::memory_order_release);
  s.check[victim].store(key.hi, std::memory_order_relaxed);
  std::size_t n = std::min(text.size(), text_room);
  // A cut value ends at a character boundary: never half of a UTF-8 sequence.
  while (n < text.size() && n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  std::memcpy(s.text[victim], text.data(), n);
  s.length[victim] = static_cast<std::uint8_t>(n);
  s.count[victim].store(smallest + 1, std::memory_order_relaxed);
  s.key[victim].store(key.lo, std::memory_order_release);
}

void top_value_window::settle(std::uint64_t word, std::size_t index, std::size_t way,
                              std::int64_t epoch) noexcept {
  const std::uint64_t n = word & pending_count_mask;
  if (n == 0) return;
  // The word's epoch: the latest one at or before `epoch` with the same low 16 bits.
  const auto behind = static_cast<std::int64_t>(
      (static_cast<std::uint64_t>(epoch) - (word >> 48)) & 0xffff);
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
  const std::uint64_t tag =
      pending_tag(epoch, s.generation[way].load(std::memory_order_acquire));
  std::uint64_t total = 0;
  // Only a thread holding a CPU's shard counts in it, and that shard is in used_shards().
  stat::for_each_used_shard([&](std::uint32_t shard) {
    const std::uint64_t p =
        pending_[shard * set_count_ + index].word[way].load(std::memory_order_relaxed);
    if ((p & ~pending_count_mask) == tag) total += p & pending_count_mask;
  });
  return total;
}

std::uint64_t top_value_window::count(const value_key& key, std::int64_t now_ms) const noexcept {
  const std::int64_t newest = now_ms / bucket_ms_;
  std::uint64_t total = 0;
  for (std::int64_t epoch = newest - static_cast<std::int64_t>(bucket_count) + 1; epoch <= newest;
       ++epoch) {
    if (epoch < 0) continue;
    const std::size_t index = set_index(key);
    const set& s = set_at(epoch, index);
    if (s.epoch.load(std::memory_order_acquire) != epoch) continue;
    for (std::size_t w = 0; w < ways; ++w) {
      if (s.key[w].load(std::memory_order_acquire) == key.lo &&
          s.check[w].load(std::memory_order_relaxed) == key.hi) {
        total += s.count[w].load(std::memory_order_relaxed) + pending(index, w, epoch, s);
        break;
      }
    }
  }
  return total;
}

std::vector<top_value_window::counted> top_value_window::values(std::int64_t now_ms) const {
  const std::int64_t newest = now_ms / bucket_ms_;
  std::unordered_map<value_key, counted, key_hash> merged;
  const auto buckets = static_cast<std::int64_t>(bucket_count);
  for (std::int64_t epoch = std::max<std::int64_t>(newest - buckets + 1, 0);
       epoch <= newest; ++epoch) {
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
          c.count += s.count[w].load(std::memory_order_relaxed) + pending(i, w, epoch, s);
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
