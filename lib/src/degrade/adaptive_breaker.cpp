// The adaptive breaker's rare path: publishing the drop ratio of a new bucket.
#include "degrade/adaptive_breaker.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

namespace floodgate::detail {

adaptive_breaker::adaptive_breaker(degrade_rule rule, std::uint64_t seed)
    : k_(rule.k),
      min_requests_(static_cast<std::uint64_t>(std::max(rule.min_request_amount, 1))),
      window_(std::max(rule.stat_interval_ms, 1)),
      random_(seed),
      rule_(std::move(rule)) {}

double adaptive_breaker::drop_ratio_of(const adaptive_window::counts& c) const noexcept {
  if (c.requests < min_requests_) {
    return 0;
  }
  const auto requests = static_cast<double>(c.requests);
  return std::max(0.0, (requests - k_ * static_cast<double>(c.accepts)) / (requests + 1));
}

std::optional<adaptive_window_state> adaptive_breaker::adaptive(
    std::int64_t now_ms) const noexcept {
  const adaptive_window::counts c = window_.read(now_ms);
  return adaptive_window_state{c.requests, c.accepts, drop_ratio_of(c)};
}

std::uint64_t adaptive_breaker::refresh(std::int64_t now_ms, std::uint64_t tag) noexcept {
  const double ratio = drop_ratio_of(window_.read(now_ms));
  // A request drops when its draw u (40 random bits over 2^40) is below the ratio: with the
  // ratio rounded up to a whole fraction of 2^40, that is u * 2^40 < ratio_fraction. ratio < 1,
  // so the fraction fits its 40 bits.
  const auto fraction = static_cast<std::uint64_t>(std::ceil(std::ldexp(ratio, ratio_bits)));
  const std::uint64_t d = (tag << ratio_bits) | std::min(fraction, ratio_mask);
  // Racing refreshes of one bucket publish nearly the same ratio; a late one of an older bucket
  // is replaced by the next request that sees it.
  decision_.store(d, std::memory_order_relaxed);
  return d;
}

std::uint64_t adaptive_breaker::fresh_seed() noexcept {
  static std::atomic<std::uint64_t> count{0};
  const auto now =
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  const auto addr = reinterpret_cast<std::uintptr_t>(&count);
  return drop_random::mix(now ^ drop_random::mix(count.fetch_add(1, std::memory_order_relaxed) ^
                                                 static_cast<std::uint64_t>(addr)));
}

}  // namespace floodgate::detail
