// The adaptive breaker: Google SRE client-side throttling over a rolling window.
#pragma once

#include <floodgate/degrade/circuit_breaker.hpp>
#include <floodgate/rules/degrade_rule.hpp>

#include "degrade/adaptive_window.hpp"
#include "degrade/drop_random.hpp"

#include <atomic>
#include <cstdint>
#include <optional>

namespace floodgate::detail {

/** A breaker of grade adaptive (Google SRE book, "Handling Overload", client-side throttling;
    go-zero's googleBreaker, Kratos' sre breaker). Instead of opening, it drops each request with
    probability `max(0, (requests - k * accepts) / (requests + 1))` over the last
    statIntervalMs, and never while the window holds fewer than minRequestAmount requests.

    `requests` counts every request the breaker decided on whose outcome is known: completed
    ones (at exit) and the ones it dropped (at once), as go-zero (markDrop) and Kratos (MarkFailed
    on a local rejection) count them and as the SRE book defines it ("requests attempted by the
    application layer"). So a dependency that serves only some of the load converges to receiving
    about k times what it accepts, and one that fails every request is shed down to a trickle
    that probes it. `accepts` counts the completions that were not errors (the chain's errors:
    trace_error, a 5xx in the middleware).

    The ratio is computed once per bucket (statIntervalMs / 40 at most) by the first request of
    that bucket and published in one atomic word: every other request reads that word, draws a
    random number from its own shard's stream and compares, so the request path never sums the
    window and threads do not write a shared line. A decision is therefore based on the window
    as it stood at most one bucket earlier; adaptive() reads the window exactly.

    @par Thread Safety
    All members may be called from any number of threads.
*/
class alignas(128) adaptive_breaker final : public circuit_breaker {
 public:
  /// Blocked requests are told to retry after this long (the ratio moves by the bucket).
  static constexpr std::int64_t retry_after_ms = 1000;

  /// `rule` must be valid and of grade adaptive; `seed` starts the random streams.
  adaptive_breaker(degrade_rule rule, std::uint64_t seed);

  const degrade_rule& rule() const noexcept override { return rule_; }
  breaker_state state() const noexcept override { return breaker_state::adaptive; }
  std::int64_t next_retry_ms() const noexcept override { return 0; }
  std::uint64_t transitions(breaker_state, breaker_state) const noexcept override { return 0; }
  std::optional<adaptive_window_state> adaptive(std::int64_t now_ms) const noexcept override;

  /// The drop ratio of a window holding `c` (the formula above).
  double drop_ratio_of(const adaptive_window::counts& c) const noexcept;

  /// Decides on a request at `now_ms`: true lets it pass (report its completion with
  /// on_request_complete()); false drops it, and it is already counted as a request.
  bool try_pass(std::int64_t now_ms) noexcept {
    const std::uint64_t tag = tag_of(window_.bucket_of(now_ms));
    std::uint64_t d = decision_.load(std::memory_order_relaxed);
    if ((d >> ratio_bits) != tag) [[unlikely]] {
      d = refresh(now_ms, tag);
    }
    const std::uint64_t ratio = d & ratio_mask;
    if (ratio == 0 || (random_.next() >> (64 - ratio_bits)) >= ratio) {
      return true;
    }
    window_.record(now_ms, false);
    return false;
  }

  /// A request this breaker let pass completed at `now_ms`; `error` as the chain counts it.
  void on_request_complete(std::int64_t now_ms, bool error) noexcept {
    window_.record(now_ms, !error);
  }

  /// The window's shape (for tests and the README's numbers).
  const adaptive_window& window() const noexcept { return window_; }

  /// A seed for a breaker built by a rule load (control plane).
  static std::uint64_t fresh_seed() noexcept;

 private:
  // The published decision: (bucket number + 1) in the high 24 bits, the drop ratio as a
  // fraction of 2^40 in the low 40 (a ratio is always < 1). 0 is never a current word.
  static constexpr unsigned ratio_bits = 40;
  static constexpr std::uint64_t ratio_mask = (std::uint64_t{1} << ratio_bits) - 1;
  static std::uint64_t tag_of(std::int64_t bucket) noexcept {
    return static_cast<std::uint64_t>(bucket + 1) & (~std::uint64_t{0} >> ratio_bits);
  }
  std::uint64_t refresh(std::int64_t now_ms, std::uint64_t tag) noexcept;

  // Read by every entry, written once per bucket.
  alignas(128) std::atomic<std::uint64_t> decision_{0};
  // Read-only after construction.
  alignas(128) double k_;
  std::uint64_t min_requests_;
  adaptive_window window_;
  drop_random random_;
  degrade_rule rule_;
};

}  // namespace floodgate::detail
