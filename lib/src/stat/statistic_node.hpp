// StatisticNode: the per-node windows and Sentinel's read formulas.
#pragma once

#include <floodgate/stat/window_config.hpp>

#include "stat/leap_array.hpp"
#include "stat/metric_bucket.hpp"
#include "stat/shard_blocks.hpp"
#include "stat/writer_shard.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>

namespace floodgate::stat {

/** Where writes at one instant land: computed once per entry or exit and reused for every node
    of an engine (they share the window shape), which saves the window arithmetic and the shard
    lookup per event. */
struct write_point {
  std::int64_t ms;
  std::int64_t window;
  std::uint64_t tag;
  std::uint32_t bucket;  ///< slot of `window` in a shard's ring
  std::uint32_t shard;   ///< the writer's shard (writer_shard.hpp)
  bool exclusive;        ///< `shard` is a CPU's: written with store_on_cpu (writer_shard.hpp)
};

/// passQps and avgRt of a node read together, in one pass over the window.
struct window_reading {
  double pass_qps = 0;
  double avg_rt = 0;
};

/** The statistics of one node: a short sliding window (2 x 500 ms by default), a one-minute
    window (60 x 1 s, created when the node writes its second short window), the borrowed future
    passes and the live concurrency.

    A request writes only the short window. The minute window is filled by folding: the writer
    whose CAS displaces a finished short-window value (see cell_add_displacing) adds it to the
    minute bucket of its second, exactly once; minute reads add the short-window values not yet
    displaced, re-reading if a fold raced with them. This halves the counter updates per
    request. The short window's bucket length must divide one second.

    The short window and the concurrency are kept once per writer shard (writer_shard.hpp): a
    thread updates its CPU's shard with restartable compare-and-stores (no lock prefix), and
    reads sum the shards. A shard's ring is
    allocated by its first write (shard_blocks.hpp), so a node written from one CPU holds one
    ring; if that allocation fails the write goes to the shared shard 0 with atomics.

    Every read takes the current time and follows Sentinel 1.8's StatisticNode formulas; every
    write takes the time of the event.

    @par Thread Safety
    Lock-free; any number of concurrent writers and readers.
*/
class statistic_node {
 public:
  explicit statistic_node(const window_config& cfg = {});
  ~statistic_node();
  statistic_node(const statistic_node&) = delete;
  statistic_node& operator=(const statistic_node&) = delete;

  /// The write point of the calling thread at `now_ms` (valid for any node of the same shape).
  write_point at(std::int64_t now_ms) const noexcept { return at(now_ms, this_thread_shard()); }
  /// The write point of a thread writing shard `shard` at `now_ms`.
  write_point at(std::int64_t now_ms, writer_shard shard) const noexcept {
    const auto w = second_.window_of(now_ms);
    return {now_ms, w, cell_tag(w), static_cast<std::uint32_t>(second_.slot(w)), shard.index,
            shard.exclusive};
  }

  // Writes. The common case (the writer's CPU shard has its ring, the bucket already holds the
  // current window) is inline: one compare-and-store on the CPU per counter (writer_shard.hpp).
  // Everything else goes to an out-of-line path that takes the write point by value, so the
  // caller's copy stays in registers.

  /// What the statistic slot records for a passed entry: pass += n, one more in flight (one
  /// sequence on a CPU shard: the pair of words 0-1 of the bucket, see second_bucket).
  [[gnu::always_inline]] void record_pass(const write_point& p, std::uint32_t n) noexcept {
    second_bucket* ring = rings_.get(p.shard);
    if (p.exclusive && ring != nullptr) [[likely]] {
      if (add_pair_on_cpu<false>(&ring[p.bucket].words[second_bucket::pass_word], p.tag, n, 1,
                                 p.shard, cell_value_bits) == cpu_store::done) [[likely]] {
        return;
      }
    }
    record_pass_slow(p, n);
  }
  /// What an exit records: success += n and the RT (one sequence on a CPU shard: words 2-3),
  /// one fewer in flight, the minimum RT, exception += n on error.
  [[gnu::always_inline]] void record_completion(const write_point& p, std::int64_t rt_ms,
                                                std::uint32_t n, bool error) noexcept {
    const std::uint64_t rt = rt_ms > 0 ? static_cast<std::uint64_t>(rt_ms) : 0;
    second_bucket* ring = rings_.get(p.shard);
    if (p.exclusive && ring != nullptr &&
        add_pair_on_cpu<true>(&ring[p.bucket].words[second_bucket::success_word], p.tag, n, rt,
                              p.shard, cell_value_bits) == cpu_store::done) [[likely]] {
      if (!add_on_cpu(ring[p.bucket].concurrency(), ~std::uint64_t{0}, p.shard)) [[unlikely]] {
        add_concurrency_slow(p, -1);
      }
      lower_min_rt(ring, p, rt);
    } else {
      record_completion_slow(p, rt, n);
    }
    if (error) {
      add_second(metric_event::exception, p, n);
    }
  }
  void add_pass(const write_point& p, std::uint32_t n) noexcept {
    add_second(metric_event::pass, p, n);
  }
  void add_block(const write_point& p, std::uint32_t n) noexcept {
    add_second(metric_event::block, p, n);
  }
  void add_exception(const write_point& p, std::uint32_t n) noexcept {
    add_second(metric_event::exception, p, n);
  }
  /// success += n, rt sum += rt (once, not times n: as Sentinel), min rt updated.
  void add_rt_and_success(const write_point& p, std::int64_t rt_ms, std::uint32_t n) noexcept {
    const std::uint64_t rt = rt_ms > 0 ? static_cast<std::uint64_t>(rt_ms) : 0;
    add_second(metric_event::success, p, n);
    add_second(metric_event::rt, p, rt);
    lower_min_rt(p, rt);
  }
  void add_pass(std::int64_t now_ms, std::uint32_t n) noexcept { add_pass(at(now_ms), n); }
  void add_block(std::int64_t now_ms, std::uint32_t n) noexcept { add_block(at(now_ms), n); }
  void add_exception(std::int64_t now_ms, std::uint32_t n) noexcept {
    add_exception(at(now_ms), n);
  }
  void add_rt_and_success(std::int64_t now_ms, std::int64_t rt_ms, std::uint32_t n) noexcept {
    add_rt_and_success(at(now_ms), rt_ms, n);
  }
  void increase_concurrency() noexcept { add_concurrency(1); }
  void decrease_concurrency() noexcept { add_concurrency(-1); }
  void increase_concurrency(const write_point& p) noexcept { add_concurrency(p, 1); }
  /// A prioritized pass borrowed from a future window: minute pass += n (as Sentinel) and the
  /// short window's occupied pass += n.
  void add_occupied_pass(std::int64_t now_ms, std::uint32_t n) noexcept;
  /// Books `n` passes into the future window containing `future_ms`.
  void add_waiting(std::int64_t future_ms, std::uint32_t n) noexcept;

  // Short-window reads (per second).
  double pass_qps(std::int64_t now_ms) const noexcept;
  double block_qps(std::int64_t now_ms) const noexcept;
  double success_qps(std::int64_t now_ms) const noexcept;
  double exception_qps(std::int64_t now_ms) const noexcept;
  double total_qps(std::int64_t now_ms) const noexcept;
  double occupied_pass_qps(std::int64_t now_ms) const noexcept;
  double avg_rt(std::int64_t now_ms) const noexcept;
  double min_rt(std::int64_t now_ms) const noexcept;
  double max_success_qps(std::int64_t now_ms) const noexcept;
  /// pass_qps and avg_rt at once (what system rules read on every inbound entry).
  window_reading read_window(std::int64_t now_ms) const noexcept;
  /// Sum of `e` over the short window (pass includes borrowed passes whose window has come).
  std::uint64_t window_sum(metric_event e, std::int64_t now_ms) const noexcept;
  /// Pass count of the short-window bucket starting at `window_start_ms`, if still in the window.
  std::uint64_t window_pass_at(std::int64_t window_start_ms, std::int64_t now_ms) const noexcept;
  /// Passes booked into future windows (Sentinel's currentWaiting).
  std::uint64_t waiting(std::int64_t now_ms) const noexcept;
  /// Passes booked into the future bucket starting at `window_start_ms`, if it is one of the
  /// short window's coming buckets.
  std::uint64_t waiting_at(std::int64_t window_start_ms, std::int64_t now_ms) const noexcept;

  // Minute-window reads.
  std::uint64_t total_request(std::int64_t now_ms) const noexcept;  ///< pass + block
  std::uint64_t total_pass(std::int64_t now_ms) const noexcept;
  std::uint64_t total_success(std::int64_t now_ms) const noexcept;
  std::uint64_t block_request(std::int64_t now_ms) const noexcept;
  std::uint64_t total_exception(std::int64_t now_ms) const noexcept;
  /// Pass / block count of the previous whole second (used by warm-up).
  double previous_pass_qps(std::int64_t now_ms) const noexcept;
  double previous_block_qps(std::int64_t now_ms) const noexcept;

  std::int64_t concurrency() const noexcept;

  /** Sentinel's tryOccupyNext: how long a prioritized request must wait for room in a coming
      window of the short interval, or `occupy_timeout_ms` when there is none. */
  std::int64_t try_occupy_next(std::int64_t now_ms, std::uint32_t acquire, double threshold,
                               std::int64_t occupy_timeout_ms) const noexcept;

  const window_config& config() const noexcept { return cfg_; }
  /// The short window's length per bucket and its divider (what config() implies, precomputed).
  int bucket_ms() const noexcept { return second_.window_ms(); }
  const fast_divider& bucket_divider() const noexcept { return second_.window_divider(); }

 private:
  std::uint64_t borrowed(std::int64_t window) const noexcept;
  template <metric_event... E>
  std::array<std::uint64_t, sizeof...(E)> window_sums(std::int64_t now_ms) const noexcept;
  std::uint64_t window_value(metric_event e, std::int64_t window) const noexcept;
  std::uint64_t second_tags(metric_event e) const noexcept;
  void add_concurrency(std::int64_t delta) noexcept;
  [[gnu::always_inline]] void add_concurrency(const write_point& p, std::int64_t delta) noexcept {
    second_bucket* ring = rings_.get(p.shard);
    if (p.exclusive && ring != nullptr &&
        add_on_cpu(ring[p.bucket].concurrency(), static_cast<std::uint64_t>(delta), p.shard))
        [[likely]] {
      return;
    }
    add_concurrency_slow(p, delta);
  }
  void add_concurrency_slow(write_point p, std::int64_t delta) noexcept;
  /// record_pass() when its pair could not be written in one sequence.
  void record_pass_slow(write_point p, std::uint32_t n) noexcept;
  /// record_completion()'s success, RT, concurrency and minimum RT when its pair could not be
  /// written in one sequence.
  void record_completion_slow(write_point p, std::uint64_t rt, std::uint32_t n) noexcept;
  /// Moves `p` to the shared shard (its thread runs on another CPU than `p`'s) and returns that
  /// shard's ring (null if memory for it ran out).
  second_bucket* move_to_shared(write_point& p) noexcept;
  /// The ring `p`'s writer writes, created on its first write; `p` moves to the shared shard
  /// when memory runs out (null if even that fails: the write is dropped).
  second_bucket* ring_for(write_point& p) noexcept {
    return rings_.fallback(p.shard, p.exclusive,
                           static_cast<std::size_t>(second_.sample_count()));
  }
  /// Whether cell word `cur` counts for window tag `tag` (an empty cell counts as window 0 with
  /// value 0, which is what adding to it means).
  static bool same_window(std::uint64_t cur, std::uint64_t tag) noexcept {
    return (cur >> cell_value_bits) == tag;
  }
  [[gnu::always_inline]] void add_second(metric_event e, const write_point& p, std::uint64_t n) noexcept {
    second_bucket* ring = rings_.get(p.shard);
    if (p.exclusive && ring != nullptr) [[likely]] {
      if (add_if_tag_on_cpu(ring[p.bucket].cell(e), p.tag, n, p.shard, cell_value_bits) ==
          cpu_store::done) [[likely]] {
        return;
      }
    }
    add_second_slow(e, p, n);
  }
  [[gnu::always_inline]] void lower_min_rt(const write_point& p, std::uint64_t rt) noexcept {
    second_bucket* ring = rings_.get(p.shard);
    if (p.exclusive && ring != nullptr) [[likely]] {
      lower_min_rt(ring, p, rt);
      return;
    }
    lower_min_rt_slow(p, rt);
  }
  /// lower_min_rt() for a CPU shard's writer whose ring is `ring`.
  [[gnu::always_inline]] void lower_min_rt(second_bucket* ring, const write_point& p,
                                           std::uint64_t rt) noexcept {
    auto& cell = ring[p.bucket].min_rt();
    const std::uint64_t th = p.tag << cell_value_bits;
    const std::uint64_t m = cell.load(std::memory_order_relaxed);
    // The cell holds this window (0 is an empty cell, not a minimum): nothing to do at or
    // below `rt`, else one store on the CPU.
    if (((m ^ th) >> cell_value_bits) == 0 && m != 0) [[likely]] {
      if ((m & cell_value_mask) <= rt ||
          store_on_cpu(cell, m, th | rt, p.shard) == cpu_store::done) [[likely]] {
        return;
      }
    }
    lower_min_rt_slow(p, rt);
  }
  /// A new window in the bucket (folding the finished one), a late event, or a shared shard.
  void add_second_slow(metric_event e, write_point p, std::uint64_t n) noexcept;
  void lower_min_rt_slow(write_point p, std::uint64_t rt) noexcept;
  /// Sum of `e` over the seconds [first_second, last_second], folded and not yet folded.
  std::uint64_t seconds_sum(metric_event e, std::int64_t now_ms, std::int64_t first_second,
                            std::int64_t last_second) const noexcept;
  std::uint64_t minute_sum(metric_event e, std::int64_t now_ms) const noexcept;
  double minute_previous(metric_event e, std::int64_t now_ms) const noexcept;

  using minute_window = leap_array<minute_bucket>;
  /// The minute window, once a fold has created it (null before: nothing to read but the
  /// short window). A node whose traffic never outlives one short window never pays for it.
  const minute_window* minute() const noexcept { return minute_.load(std::memory_order_acquire); }
  /// The minute window, created by the first fold; null only if memory ran out (the folded
  /// value is then dropped from the minute totals, never from the short window).
  minute_window* minute_for_fold() noexcept;
  /// Creates the minute window once the node writes a second short window (in any shard), so
  /// that it exists before the first fold, whichever shard folds first.
  void note_window(std::int64_t window) noexcept;

  window_config cfg_;
  window_geometry second_;             // the short window's shape
  shard_blocks<second_bucket> rings_;  // its ring, per writer shard
  std::atomic<minute_window*> minute_{nullptr};
  std::atomic<std::int64_t> first_window_{std::numeric_limits<std::int64_t>::min()};
  leap_array<waiting_bucket> borrow_;  // 2 x sample_count slots: covers past and future windows
};

}  // namespace floodgate::stat
