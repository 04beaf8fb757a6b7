// The warm-up controller (Sentinel's WarmUpController): a Guava-style token bucket, cold factor 3.
#pragma once

#include <floodgate/chain/slot.hpp>
#include "flow/flow_request.hpp"
#include "flow/throttling_controller.hpp"
#include "stat/statistic_node.hpp"

#include <atomic>
#include <cstdint>

namespace floodgate::flow {

/** Ramps a QPS limit up from `count / cold_factor` to `count` over `warm_up_period_sec`.

    Sentinel 1.8's math exactly, Java integer truncations included:
    - `warning_token = (int)(period * count) / (cold_factor - 1)`
    - `max_token = warning_token + (int)(2 * period * count / (1.0 + cold_factor))`
    - `slope = (cold_factor - 1.0) / count / (max_token - warning_token)`

    Once per second (`now - now % 1000`) the bucket is refilled at `count` tokens per second while
    below the warning token (or above it while the previous second's passes were below
    `(int) count / cold_factor`), capped at `max_token`, then drained by the previous second's
    passes. A new bucket is full: traffic starts cold. With `stored >= warning_token` the limit is
    `Math.nextUp(1 / ((stored - warning_token) * slope + 1 / count))`, else `count`; an entry
    passes when `(long) passQps + acquire` is within the limit.

    Example: count 10, period 10 s → warning token 50, max token 100, slope 0.004, a cold limit of
    3.33 QPS.

    Two departures from Sentinel, where its rule never admits anything and so never warms up:
    - a cold limit under one entry a second (count 2, period 2 s: 0.67 QPS), which a one-second
      window can never hold, admits entries spaced `acquire / limit` seconds apart instead (as
      throttling does), each into a window holding no pass, so the passes drain the bucket and
      the limit reaches `count`;
    - if `period * count < 2` there is no room to warm up (`max_token == warning_token == 0`;
      Sentinel's limit is NaN): the limit is `count`, as warm-up throttling's already was.
    An `acquire` over `count` is blocked whatever the tokens, as a reject rule blocks it.

    @par Thread Safety
    Lock-free. The once-per-second refill is claimed by one thread with a compare-and-swap on the
    fill time (Sentinel lets racing threads both refill).
*/
class warm_up_controller {
 public:
  static constexpr int default_cold_factor = 3;

  warm_up_controller(double count, std::int32_t warm_up_period_sec,
                     int cold_factor = default_cold_factor) noexcept;

  /** Sentinel's canPass against `node`'s pass QPS and previous-second passes. A pass spaced
      under a cold limit below one entry a second is booked (`booking.queued`): unqueue() gives
      it back when a later rule blocks the entry. */
  slot_verdict check(const flow_request& req, const stat::statistic_node& node,
                     flow_booking& booking) noexcept;

  /// Gives back a spaced pass (flow_booking::queued) of an entry blocked later.
  void unqueue(std::int64_t from_ns, std::int64_t to_ns) noexcept;

  /** Refills and drains the bucket once per second (Sentinel's syncToken). `previous_pass_qps`
      is the passes of the previous whole second. */
  void sync_token(std::int64_t now_ms, std::int64_t previous_pass_qps) noexcept;

  /// The QPS limit with `tokens` stored (`count` when the bucket has no room to warm up).
  double allowed_qps(std::int64_t tokens) const noexcept;

  /// The bucket's parameters (see the class comment) and its current content.
  double count() const noexcept { return count_; }
  std::int64_t warning_token() const noexcept { return warning_token_; }
  std::int64_t max_token() const noexcept { return max_token_; }
  double slope() const noexcept { return slope_; }
  std::int64_t stored_tokens() const noexcept {
    return stored_tokens_.load(std::memory_order_acquire);
  }

 private:
  std::int64_t cool_down_tokens(std::int64_t old_tokens, std::int64_t elapsed_ms,
                                std::int64_t previous_pass_qps) const noexcept;

  double count_;
  int cold_factor_;
  std::int64_t warning_token_;
  std::int64_t max_token_;
  double slope_;
  alignas(64) std::atomic<std::int64_t> stored_tokens_{0};
  std::atomic<std::int64_t> last_filled_ms_;
  throttling_controller spacing_;  ///< passes spaced under a cold limit below 1 a second
};

}  // namespace floodgate::flow
