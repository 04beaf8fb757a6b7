// The approximate most frequent values of a parameter over a sliding window, in fixed memory.
#pragma once

#include "param/value_key.hpp"
#include "stat/writer_shard.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace floodgate::param_detail {

/** Counts requests per value over a sliding window and answers "which values were counted most",
    in memory fixed at construction whatever the number of distinct values.

    Why this shape: the window is a ring of `bucket_count` buckets (LeapArray style: a bucket is
    reused, emptied, once its time has passed), and each bucket is a Space-Saving summary
    (Metwally et al. 2005) split into sets of `ways` slots by the value's hash. A value already in
    its set costs one atomic increment; a new value takes a free slot or replaces the set's
    smallest count c and starts at c + 1 (Space-Saving's rule: a value's count never
    under-estimates, and over-estimates by at most the c it inherited). A frequent value is
    counted from its first requests in a bucket, when its set is still nearly empty, and is never
    the smallest of its set afterwards, so its counts are near-exact; only the tail churns.
    A value has two candidate sets in each bucket (two halves of its hash; the first is
    looked in first) and goes to the first while it has two free slots, else to the one with
    more, so a set is full only when its values' other sets are nearly full too. With one set
    per value, a bucket holding 256 values in 512 slots had sets of nine or more, which
    replaced values on every request of them (4 % of all requests took the insert path; none
    with two sets). With that and the counts on a line of their own (see `set`), two threads
    recording their own values run 1.82x one thread in BM_HotKeys_SummaryRecord (1.23x
    before). Buckets are merged on read (control plane). A count-min sketch with a heap was the
    other candidate: it needs several increments per request on shared lines, over-estimates
    every value by the tail's collisions, and still needs the values' text somewhere for the
    report.

    A thread on a CPU with a writer shard (stat/writer_shard.hpp) counts a value present in its
    set in that CPU's own pending word for that slot, with a compare-and-store on the CPU (no
    lock prefix), and adds it to the set's count `flush_at` requests at a time: the
    sets' count lines are then written by one core in `flush_at` requests instead of by every
    core on every request, which is what made two threads no faster than one. A set's slots
    hold values of every thread, so each flush still costs the other core a miss on that line:
    at 32 requests a flush the summary case of floodgate_paired_slices ran 1.65-1.74x one
    thread at two, at 256 1.78-1.82x (same session, alternating binaries). Readers add the
    pending words of every shard, so counts stay exact once writers are quiet. A pending word
    names the bucket and the slot's generation (bumped when the slot takes another value): the
    requests of a value replaced meanwhile are dropped with it, as Space-Saving drops the
    counts of the value it evicts.

    @par Thread Safety
    record() is lock-free for a value present in one of its sets (acquire scans and a relaxed
    increment, or a store on the caller's CPU into its own shard). Emptying expired sets and
    inserting a new value take the flags of the value's two sets with try-locks that never
    wait: if another thread holds one, the request is not counted (see skipped()). count() is
    lock-free; values() takes each set's flag in turn, briefly (control plane). A request
    racing with the replacement of a cold value may add one to the newcomer.
*/
class top_value_window {
 public:
  static constexpr std::size_t bucket_count = 10;
  static constexpr std::size_t ways = 8;
  /// Bytes of a value's text kept for reports; longer values are shown cut (the count is the
  /// whole value's, since values are told apart by their hash).
  static constexpr std::size_t text_room = 47;
  /// Requests a writer shard counts on its own before adding them to the shared set.
  static constexpr std::uint32_t flush_at = 256;

  /** A value and its count over the window, merged over the buckets. `count` never
      under-estimates; it over-estimates by at most `error`, the counts the value inherited when
      it took another's slot (Space-Saving's epsilon): the value had at least `count - error`
      requests. */
  struct counted {
    value_key key;
    std::string text;
    std::uint64_t count = 0;
    std::uint64_t error = 0;
    std::uint64_t guaranteed() const noexcept { return count - error; }
  };

  /// `window_ms` >= bucket_count; `slots` per bucket (rounded up to a multiple of ways).
  top_value_window(std::int64_t window_ms, std::size_t slots);
  ~top_value_window();
  top_value_window(const top_value_window&) = delete;
  top_value_window& operator=(const top_value_window&) = delete;

  /// Counts one request for `key` (whose text is `text`) at `now_ms`. Never allocates.
  void record(const value_key& key, std::string_view text, std::int64_t now_ms) noexcept;
  /// The count of `key` over the window ending at `now_ms`; 0 if it is not in the summary.
  std::uint64_t count(const value_key& key, std::int64_t now_ms) const noexcept {
    return tally(key, now_ms).count;
  }
  /// The requests `key` certainly had in the window (its count less what it inherited).
  std::uint64_t guaranteed_count(const value_key& key, std::int64_t now_ms) const noexcept {
    return tally(key, now_ms).guaranteed();
  }
  /// Every value in the summary with its count over the window, highest first (ties by text).
  std::vector<counted> values(std::int64_t now_ms) const;

  /// Requests not counted because a set's flag was busy.
  std::uint64_t skipped() const noexcept { return skipped_.load(std::memory_order_relaxed); }
  std::int64_t bucket_ms() const noexcept { return bucket_ms_; }
  std::size_t slots_per_bucket() const noexcept { return set_count_ * ways; }
  /// Bytes of the summary (all buckets), fixed at construction.
  std::size_t memory_bytes() const noexcept;

 private:
  /// count() and guaranteed_count(): the key's count and error over the window.
  struct counts {
    std::uint64_t count = 0;
    std::uint64_t error = 0;
    std::uint64_t guaranteed() const noexcept { return count - error; }
  };
  counts tally(const value_key& key, std::int64_t now_ms) const noexcept;

  static constexpr std::uint64_t empty_key = 0;
  static constexpr std::uint64_t busy_key = 1;  // being rewritten: matches no value

  // The first three lines are what every record() reads (epoch and generations, keys, checks);
  // they change only when a bucket starts or a value comes in. The counts, which writer shards
  // add to when they flush, have a line of their own: on the first line, each flush cost the
  // other cores a miss on their next record() of the set.
  struct alignas(64) set {
    std::atomic<std::int64_t> epoch;  // the bucket epoch (now_ms / bucket_ms) its slots count
    std::atomic<bool> locked;
    std::uint8_t length[ways];                         // guarded by locked
    std::atomic<std::uint8_t> generation[ways];        // bumped when a slot takes another value
    alignas(64) std::atomic<std::uint64_t> key[ways];  // key.lo; empty_key or busy_key if none
    std::atomic<std::uint64_t> check[ways];            // key.hi
    alignas(64) std::atomic<std::uint32_t> count[ways];
    char text[ways][text_room + 1];  // guarded by locked
    // The count a slot's value started from (Space-Saving's epsilon): written under locked,
    // read without it by count().
    std::atomic<std::uint32_t> inherited[ways];
  };

  /// One writer shard's requests not yet added to the sets of one set index (any bucket): per
  /// slot, (epoch & 0xffff) << 48 | generation << 32 | count, or 0.
  struct alignas(64) pending_set {
    std::atomic<std::uint64_t> word[ways];
  };
  static std::uint64_t pending_tag(std::int64_t epoch, std::uint8_t generation) noexcept {
    return (static_cast<std::uint64_t>(epoch) & 0xffff) << 48 |
           static_cast<std::uint64_t>(generation) << 32;
  }
  static constexpr std::uint64_t pending_count_mask = 0xffff'ffff;

  /// The value's first and second set index (equal when there is one set).
  std::size_t first_index(const value_key& key) const noexcept {
    return static_cast<std::size_t>((static_cast<detail::uint128>(key.hi) * set_count_) >> 64);
  }
  std::size_t second_index(const value_key& key) const noexcept {
    return static_cast<std::size_t>((static_cast<detail::uint128>(key.lo) * set_count_) >> 64);
  }
  set& set_at(std::int64_t epoch, std::size_t index) const noexcept {
    return sets_[static_cast<std::size_t>(epoch) % bucket_count * set_count_ + index];
  }
  /// Counts one request for slot `way` of set `index` of `epoch` in `shard`'s pending word.
  void count_pending(std::uint32_t shard, std::size_t index, std::size_t way, std::int64_t epoch,
                     set& s) noexcept;
  /// Adds a pending word of another epoch or generation to its set, if that still holds it.
  void settle(std::uint64_t word, std::size_t index, std::size_t way, std::int64_t epoch) noexcept;
  /// The requests of slot `way` of `s` (set `index` of `epoch`) still pending in the shards.
  std::uint64_t pending(std::size_t index, std::size_t way, std::int64_t epoch,
                        const set& s) const noexcept;
  static bool try_lock(set& s) noexcept;
  static void lock(set& s) noexcept;
  static void unlock(set& s) noexcept { s.locked.store(false, std::memory_order_release); }
  /// Empties `s` for `epoch`; its flag is held.
  static void reset(set& s, std::int64_t epoch) noexcept;
  /// What counting a request in one of a value's sets found.
  enum class presence : std::uint8_t { counted, absent, expired };
  /// Counts one request for `key` if set `index` of `epoch` holds it.
  presence count_if_present(std::size_t index, std::int64_t epoch, const value_key& key) noexcept;
  /// The slot of `key` in `s`, or `ways`.
  static std::size_t way_of(const set& s, const value_key& key) noexcept;
  /// Counts `key`, absent from both its sets of `epoch`, under their flags (or as skipped).
  void add(std::size_t first, std::size_t second, std::int64_t epoch, const value_key& key,
           std::string_view text) noexcept;
  /// Counts `key` in set `first` or `second` of `epoch`, both flags held: increments it if
  /// another thread inserted it meanwhile, else gives it a free slot of either set or, both
  /// full, the smallest of their slots (counting the shards' pending requests).
  void insert(std::size_t first, std::size_t second, std::int64_t epoch, const value_key& key,
              std::string_view text) noexcept;

  std::int64_t bucket_ms_;
  std::size_t set_count_;
  std::unique_ptr<set[]> sets_;                        // bucket_count × set_count_
  std::unique_ptr<pending_set[]> pending_;             // stat::shard_count() × set_count_
  alignas(64) std::atomic<std::uint64_t> skipped_{0};  // apart from the fields every record() reads
};

inline top_value_window::presence top_value_window::count_if_present(
    std::size_t index, std::int64_t epoch, const value_key& key) noexcept {
  set& s = set_at(epoch, index);
  const std::int64_t current = s.epoch.load(std::memory_order_acquire);
  if (current != epoch) [[unlikely]] {
    // A set of an older bucket holds nothing of this one; a newer bucket means this time has
    // left the window.
    return current < epoch ? presence::absent : presence::expired;
  }
  const std::size_t w = way_of(s, key);
  if (w == ways) return presence::absent;
  const stat::writer_shard ws = stat::this_thread_shard();
  if (ws.exclusive) [[likely]] {
    count_pending(ws.index, index, w, epoch, s);
  } else {
    s.count[w].fetch_add(1, std::memory_order_relaxed);
  }
  return presence::counted;
}

inline std::size_t top_value_window::way_of(const set& s, const value_key& key) noexcept {
  for (std::size_t w = 0; w < ways; ++w) {
    if (s.key[w].load(std::memory_order_acquire) == key.lo &&
        s.check[w].load(std::memory_order_relaxed) == key.hi) {
      return w;
    }
  }
  return ways;
}

inline void top_value_window::record(const value_key& key, std::string_view text,
                                     std::int64_t now_ms) noexcept {
  const std::int64_t epoch = now_ms / bucket_ms_;
  const std::size_t first = first_index(key);
  const presence in_first = count_if_present(first, epoch, key);
  if (in_first != presence::absent) [[likely]]
    return;
  const std::size_t second = second_index(key);
  if (second != first) {
    if (count_if_present(second, epoch, key) != presence::absent) return;
  }
  add(first, second, epoch, key, text);
}

}  // namespace floodgate::param_detail

namespace floodgate::param_detail {

inline void top_value_window::count_pending(std::uint32_t shard, std::size_t index, std::size_t way,
                                            std::int64_t epoch, set& s) noexcept {
  auto& word = pending_[shard * set_count_ + index].word[way];
  const std::uint64_t tag = pending_tag(epoch, s.generation[way].load(std::memory_order_acquire));
  for (;;) {
    const std::uint64_t p = word.load(std::memory_order_relaxed);  // written on its CPU only
    const bool same = (p & ~pending_count_mask) == tag;  // an empty word of tag 0 counts too
    const std::uint64_t n = same ? (p & pending_count_mask) + 1 : 1;
    // Below flush_at the word keeps the count; at it, or for another slot's word, the word is
    // emptied first and what it held goes to its set (readers may miss those requests between
    // the two steps, never count them twice).
    const std::uint64_t next = same && n < flush_at ? tag | n : (same ? tag : tag | 1);
    switch (stat::store_on_cpu(word, p, next, shard)) {
      case stat::cpu_store::done:
        if (!same) {
          settle(p, index, way, epoch);
        } else if (n >= flush_at) {
          s.count[way].fetch_add(static_cast<std::uint32_t>(n), std::memory_order_relaxed);
        }
        return;
      case stat::cpu_store::changed:
        continue;
      case stat::cpu_store::moved:  // the thread runs on another CPU now: count in the set
      case stat::cpu_store::guarded:
        s.count[way].fetch_add(1, std::memory_order_relaxed);
        return;
    }
  }
}

}  // namespace floodgate::param_detail
