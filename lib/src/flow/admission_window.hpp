// The admission window: a QPS limit that books passes atomically, so racing threads never
// overshoot.
#pragma once

#include "stat/shard_blocks.hpp"
#include "stat/statistic_node.hpp"
#include "stat/tagged_cell.hpp"

#include "stat/writer_shard.hpp"

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>

namespace floodgate::flow {

/// The geometry of a node's short window, as the admission window needs it.
struct window_shape {
  int sample_count;
  std::int64_t interval_ms;
  std::int64_t window_ms;
  const stat::fast_divider* divider = nullptr;  ///< divides by window_ms, when known

  explicit window_shape(const stat::window_config& cfg) noexcept
      : sample_count(cfg.second_sample_count),
        interval_ms(cfg.second_interval_ms),
        window_ms(cfg.second_sample_count > 0 ? cfg.second_interval_ms / cfg.second_sample_count
                                              : 0) {}
  /// The shape of `node`'s short window, with its precomputed divider (no division per call).
  explicit window_shape(const stat::statistic_node& node) noexcept
      : sample_count(node.config().second_sample_count),
        interval_ms(node.config().second_interval_ms),
        window_ms(node.bucket_ms()),
        divider(&node.bucket_divider()) {}

  /// The window containing `t_ms` >= 0.
  std::int64_t window_of(std::int64_t t_ms) const noexcept {
    return divider != nullptr ? divider->divide(t_ms) : t_ms / window_ms;
  }
};

/** A sliding window of admission counts owned by one flow rule.

    Sentinel's DefaultController reads `passQps` and then lets the request pass: two threads can
    both read `count - 1` and both pass. Here a pass is booked by a compare-and-swap on the
    current window's cell that succeeds only if the earlier windows of the interval plus the
    current one plus `acquire` still fit under the threshold. The earlier windows are *sealed*
    first: a seal bit in the cell makes any later booking into that window fail, so the values
    read are final. Hence, for every window `w`, the bookings of the interval ending at `w` never
    exceed the threshold, whatever the number of threads (each booking into `w` happened while
    the rest of its interval was sealed, and sealed cells only ever go down, by refunds).

    A request whose clock reading lags behind a booking already made in a later window finds its
    window sealed and is blocked (its passes would otherwise land in a window others have read
    as final). That only happens to a thread that read the clock just before a window boundary.

    Prioritized requests may book into a coming window (Sentinel's tryOccupyNext): the windows
    between now and that window are sealed first, which closes the current window early — it is
    full anyway, or the request would not be borrowing.

    Cells are @ref stat::tagged_cell words (window tag, count) in a ring of
    2 x @ref max_sample_count: the interval's windows plus as many coming ones.

    **Leases.** A thread on a CPU with a writer shard (stat/writer_shard.hpp) books a few passes
    more than it needs while the window is far from full, for that CPU, and the CPU's entries
    spend them later from that CPU's lease word (a store on the CPU, stat::store_on_cpu_unless,
    on a line no other core writes), without touching the shared cell: two cores admitting into one window then do not
    take turns on its cache line for every pass. A cell counts what it handed out, used or not,
    so the bound above holds for the passes (they are at most the handed-out count). A lease is
    at most a quarter of what the window still has, shared out over the shards (and at most
    @ref max_lease), so leases shrink to nothing as the window fills and the last passes are
    booked one by one; a lease left from another window (earlier, or later for a clock reading
    ahead of the others) is given back (refunded) by its CPU's next booking. A lease older than
    @ref lease_period_ms that its CPU has stopped spending is given back by the first request
    refused while it is out (it revokes the lease, restarts every store on a CPU under way
    (stat::restart_cpu_sequences), then empties it: the passes it held are either spent before
    or given back, never both), so an idle CPU's lease never starves the window. Without that
    restart (an old kernel) no CPU takes leases.
    Leases are used only with a one-second interval, where Sentinel's test is
    `passes + acquire <= count` and booking several passes at once is the same test.

    @par Thread Safety
    Lock-free; any number of threads.
*/
class admission_window {
 public:
  /// Largest `second_sample_count` the window supports; beyond it the rule reads node statistics.
  static constexpr int max_sample_count = 16;
  /// Most passes a thread books ahead for itself (see Leases).
  static constexpr std::uint64_t max_lease = 64;
  /// How long a lease is its shard's alone: afterwards a refused request may take it back.
  static constexpr std::int64_t lease_period_ms = 10;

  admission_window() = default;

  /// True when the window can follow `s`: 1 to 16 samples that divide the interval evenly.
  static bool supports(const window_shape& s) noexcept {
    return s.sample_count >= 1 && s.sample_count <= max_sample_count && s.window_ms > 0 &&
           s.window_ms * s.sample_count == s.interval_ms;
  }

  /// The answer to @ref admit.
  struct admission {
    bool admitted = false;
    std::int64_t window = -1;         ///< the window booked into (admitted) or tried
    std::int64_t retry_after_ms = 0;  ///< blocked: until enough of the interval slid out, >= 1
  };

  /// The answer to @ref occupy_next.
  struct occupation {
    bool booked = false;
    std::int64_t window = -1;   ///< the coming window booked into
    std::int64_t start_ms = 0;  ///< when that window starts: the request waits until then
  };

  /** The common case of @ref admit, inline: the calling thread's CPU shard `ws` still holds
      `acquire` leased passes of `window` (the window containing the entry's time). Spends
      them and returns true; false means "call admit", nothing was taken. */
  bool spend_lease(std::int64_t window, std::uint32_t acquire, stat::writer_shard ws) noexcept {
    if (!ws.exclusive) {
      return false;
    }
    lease_word* own = leases_.get(ws.index);
    return own != nullptr && take_from_lease(*own, window, acquire, ws.index);
  }

  /** Books `acquire` passes into the window containing `now_ms` if the interval ending there
      stays within `count` per second (Sentinel's `(int) passQps + acquire <= count`). */
  admission admit(std::int64_t now_ms, std::uint32_t acquire, double count,
                  const window_shape& shape) noexcept {
    return admit_once(now_ms, acquire, count, shape, true);
  }

  /** Books `acquire` passes into the first coming window whose interval has room and that
      starts less than `occupy_timeout_ms` from now. */
  occupation occupy_next(std::int64_t now_ms, std::uint32_t acquire, double count,
                         std::int64_t occupy_timeout_ms, const window_shape& shape) noexcept;

  /** Starts a new rule's window from the traffic already under way: each window of the interval
      ending at `now_ms` is booked with the passes `node` recorded in it (Sentinel's rule reads
      the node, so a rule loaded mid-second sees that second's passes). Before publication only:
      not thread-safe. */
  void seed(const stat::statistic_node& node, std::int64_t now_ms,
            const window_shape& shape) noexcept;

  /// Gives back passes booked into `window` by an entry that was blocked later in the chain.
  void refund(std::int64_t window, std::uint32_t acquire) noexcept;

  /// Passes booked into `window` (0 once its slot holds another window).
  std::uint64_t booked(std::int64_t window) const noexcept;

 private:
  struct lease_word;
  static constexpr int ring_size = 2 * max_sample_count;

  std::atomic<std::uint64_t>& cell(std::int64_t window) noexcept {
    return cells_[static_cast<std::size_t>(window % ring_size)];
  }
  const std::atomic<std::uint64_t>& cell(std::int64_t window) const noexcept {
    return cells_[static_cast<std::size_t>(window % ring_size)];
  }
  /// Closes `window` to bookings; its final count, or -1 if its slot moved on to a later window.
  std::int64_t seal(std::int64_t window) noexcept;
  /// Sets shard `shard`'s lease `l` (the caller runs on that shard's CPU) to `extra` passes of
  /// `window` plus what it still holds of that window, giving back what it held of an earlier
  /// one; gives `extra` back instead if the lease cannot be written now.
  void renew_lease(lease_word& l, std::int64_t window, std::uint64_t extra,
                   std::uint32_t shard) noexcept;
  /// Gives back what lease word `old` held (its window seen from `window`).
  void give_back(std::uint64_t old, std::int64_t window) noexcept;
  /// Takes `acquire` passes of `window` from shard `shard`'s lease `l` (the caller runs on that
  /// shard's CPU) if it holds that many.
  static bool take_from_lease(lease_word& l, std::int64_t window, std::uint32_t acquire,
                              std::uint32_t shard) noexcept {
    const std::uint64_t tag = stat::cell_tag(window);
    for (;;) {
      const std::uint64_t held = l.word.load(std::memory_order_relaxed);
      if ((held >> stat::cell_value_bits) != tag || (held & stat::cell_value_mask) < acquire) {
        return false;
      }
      const stat::cpu_store r = stat::store_on_cpu_unless(l.word, held, held - acquire, shard,
                                                          l.revoked);
      if (r != stat::cpu_store::changed) [[likely]] {
        return r == stat::cpu_store::done;
      }
    }
  }
  /// The key of a refusal (see lease_word): never 0.
  static std::uint64_t refusal_key(std::int64_t now_ms, std::uint32_t acquire, double count,
                                   std::uint64_t refunds) noexcept;
  /// Takes back the leases of other shards older than lease_period_ms; true if any was.
  bool reclaim_idle_leases(std::int64_t window, std::int64_t now_ms, std::uint32_t own) noexcept;
  admission admit_once(std::int64_t now_ms, std::uint32_t acquire, double count,
                       const window_shape& s, bool may_reclaim) noexcept;

  /** Per writer shard: the lease, and the last refusal. Within one millisecond a window's
      bookings only grow unless a refund lowers them, so a refusal stays right for the same
      (millisecond, acquire, count) until the next refund: a flood of refused entries then skips
      the sealing and the sums (see admit). The refusal is a 64-bit key of those four values and
      the retry time stamped with the key's low half, each one atomic word: threads of one CPU
      (or one that moved) may write it at once, and a reader uses it only when both words agree.
      Two different refusals would have to share a 64-bit key to be confused. */
  struct alignas(64) lease_word {
    std::atomic<std::uint64_t> word{0};  // tagged cell: (window tag, passes left)
    /// Set while another CPU takes the lease back (stat::store_on_cpu_unless).
    std::atomic<std::uint32_t> revoked{0};
    std::atomic<std::int64_t> leased_ms{0};  // when the lease was last topped up
    std::atomic<std::uint64_t> refused_key{0};
    std::atomic<std::uint64_t> refused_retry{0};  // (refused_key & 0xffffffff) << 32 | retry ms
  };

  // One per writer shard, created by the shard's first booking (stat/shard_blocks.hpp); a
  // shard whose creation failed books without a lease, like a thread without a shard.
  stat::shard_blocks<lease_word> leases_;
  std::atomic<std::uint64_t> refunds_{0};  // counts refunds (rare: may share the read-only line)
  alignas(64) std::atomic<std::uint64_t> cells_[ring_size] = {};
};

}  // namespace floodgate::flow
