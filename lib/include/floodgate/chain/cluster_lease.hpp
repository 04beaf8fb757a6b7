// A cluster rule's lease: passes an external token source (Redis) reserved for this instance.
#pragma once

#include <atomic>
#include <cstdint>

namespace floodgate {

/// How a cluster rule decides right now (SPEC §10).
enum class cluster_mode : std::uint8_t {
  global = 0,          ///< spends passes leased from the shared window; none left: blocked
  fallback_local = 1,  ///< the source failed: a local limit of fallback_count() per second
  fallback_pass = 2,   ///< the source failed and fallbackToLocalWhenFail is false: passes
};

/** The meeting point of a clusterMode flow rule and the token source that feeds it.

    The flow slot spends passes with try_take() on request threads; a token source (the Redis
    adapter, floodgate/cluster/) refills it with grant() from its own thread, takes back what is
    left when a lease expires (revoke()), and switches the mode when the shared store fails or
    recovers. The engine creates one per clusterMode rule and keeps it across reloads while the
    rule is unchanged; sources find them with engine::for_each_cluster_rule().

    A lease carries an expiry on the engine's clock (milliseconds): passes are spent only before
    it, so a pass granted in one of the store's window buckets is spent inside that bucket.

    A new lease is in global mode with nothing granted: until a source serves it, the rule blocks
    (it never lets more than the fleet's count through because nobody was asked).

    @par Thread Safety
    Every member is lock-free and safe from any thread; try_take() and note_miss() never
    allocate.
*/
class cluster_lease {
 public:
  /// Takes `n` passes valid at `now_ms`; false when the lease is expired or too small.
  bool try_take(std::uint32_t n, std::int64_t now_ms) noexcept {
    std::uint64_t s = state_.load(std::memory_order_acquire);
    for (;;) {
      const auto expiry = static_cast<std::uint32_t>(s >> 32);
      const auto available = static_cast<std::uint32_t>(s);
      if (static_cast<std::int32_t>(expiry - static_cast<std::uint32_t>(now_ms)) <= 0 ||
          available < n) {
        return false;
      }
      if (state_.compare_exchange_weak(s, s - n, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
        return true;
      }
    }
  }

  /// Records `n` passes wanted but not leased (what the source sizes the next lease by).
  void note_miss(std::uint32_t n) noexcept { misses_.fetch_add(n, std::memory_order_relaxed); }
  /// Records a pass let through unchecked (fallback_pass mode).
  void note_unchecked_pass() noexcept { unchecked_.fetch_add(1, std::memory_order_relaxed); }
  /// Records `n` passes admitted by the local limit (fallback_local mode).
  void note_fallback_pass(std::uint32_t n) noexcept {
    fallback_passes_.fetch_add(n, std::memory_order_relaxed);
  }

  /** Replaces the lease with `passes` valid until `expires_ms` (engine clock). Returns what the
      previous lease still held, unspent (the source hands it back to the store). */
  std::uint32_t grant(std::uint32_t passes, std::int64_t expires_ms) noexcept {
    const std::uint64_t s = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(expires_ms))
                             << 32) |
                            passes;
    return static_cast<std::uint32_t>(state_.exchange(s, std::memory_order_acq_rel));
  }
  /// Ends the lease now; returns the passes it still held.
  std::uint32_t revoke() noexcept {
    return static_cast<std::uint32_t>(state_.exchange(0, std::memory_order_acq_rel));
  }
  /// Passes still held (expired or not).
  std::uint32_t available() const noexcept {
    return static_cast<std::uint32_t>(state_.load(std::memory_order_acquire));
  }
  /// Misses since the last call.
  std::uint64_t take_misses() noexcept { return misses_.exchange(0, std::memory_order_relaxed); }
  /// Passes let through unchecked in fallback_pass mode, since the lease was made.
  std::uint64_t unchecked_passes() const noexcept {
    return unchecked_.load(std::memory_order_relaxed);
  }
  /** Passes admitted by the local limit in fallback_local mode, since the lease was made: a
      source that recovers records the last window's in the store, which never saw them. (Passes
      let through unchecked are not: the rule said not to limit while the store fails.) */
  std::uint64_t fallback_passes() const noexcept {
    return fallback_passes_.load(std::memory_order_relaxed);
  }

  /** Passes this instance spent from leases within the last window, which the local limit of
      fallback_local counts against fallback_count() (a switch to the fallback mid-window does not
      start the window over). The source lowers it as they slide out. */
  void set_fallback_debt(std::uint32_t passes) noexcept {
    fallback_debt_.store(passes, std::memory_order_relaxed);
  }
  std::uint32_t fallback_debt() const noexcept {
    return fallback_debt_.load(std::memory_order_relaxed);
  }

  cluster_mode mode() const noexcept { return mode_.load(std::memory_order_acquire); }
  /// Sets the mode, with the local limit to enforce in fallback_local.
  void set_mode(cluster_mode m, double fallback_count = 0) noexcept {
    fallback_count_.store(fallback_count, std::memory_order_relaxed);
    mode_.store(m, std::memory_order_release);
  }
  /// The local per-second limit in fallback_local mode.
  double fallback_count() const noexcept { return fallback_count_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> state_{0};  // expiry ms (low 32 bits of the clock) << 32 | passes
  std::atomic<cluster_mode> mode_{cluster_mode::global};
  std::atomic<double> fallback_count_{0};
  alignas(64) std::atomic<std::uint64_t> misses_{0};
  std::atomic<std::uint64_t> unchecked_{0};
  std::atomic<std::uint64_t> fallback_passes_{0};
  std::atomic<std::uint32_t> fallback_debt_{0};
};

}  // namespace floodgate
