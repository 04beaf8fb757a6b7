// The circuit breaker's transitions (the rare path; the per-request path is inline).
#include "chain/serial_number.hpp"
#include "degrade/circuit_breaker_impl.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace floodgate {

std::uint64_t circuit_breaker::next_serial() noexcept { return detail::next_serial_number(); }

std::string_view to_string(breaker_state s) noexcept {
  switch (s) {
    case breaker_state::closed: return "closed";
    case breaker_state::open: return "open";
    case breaker_state::half_open: return "half_open";
    case breaker_state::adaptive: return "adaptive";
  }
  return "closed";
}

namespace detail {

namespace {

// Sentinel's maxAllowedRt = round(count); clamped so a huge count cannot overflow.
std::int64_t max_rt_of(double count) noexcept {
  constexpr double limit = static_cast<double>(std::numeric_limits<std::int64_t>::max() / 2);
  return std::llround(std::clamp(count, 0.0, limit));
}

}  // namespace

circuit_breaker_impl::circuit_breaker_impl(degrade_rule rule, const breaker_observers& observers)
    : word_(pack(breaker_state::closed, 0)),
      window_(std::max<std::int64_t>(rule.stat_interval_ms, 1)),
      grade_(rule.grade),
      slow_grade_(rule.grade == degrade_grade::slow_request_ratio),
      threshold_(slow_grade_ ? rule.slow_ratio_threshold : rule.count),
      max_rt_ms_(max_rt_of(rule.count)),
      min_request_amount_(static_cast<std::uint64_t>(std::max(rule.min_request_amount, 1))),
      recovery_ms_(std::int64_t{rule.time_window_sec} * 1000),
      observers_(&observers),
      rule_(std::move(rule)) {}

bool circuit_breaker_impl::transition(std::int64_t& expected, breaker_state to,
                                      std::int64_t retry_ms,
                                      std::optional<double> value) noexcept {
  const breaker_state from = state_of(expected);
  if (!word_.compare_exchange_strong(expected, pack(to, retry_ms), std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
    return false;
  }
  transitions_[index(from)][index(to)].fetch_add(1, std::memory_order_relaxed);
  observers_->notify(from, to, rule_, value);
  return true;
}

void circuit_breaker_impl::revert_probe() noexcept {
  std::int64_t w = word_.load(std::memory_order_acquire);
  if (state_of(w) == breaker_state::half_open) {
    // Keeps the probe time: the next request may probe at once.
    transition(w, breaker_state::open, retry_of(w), 1.0);
  }
}

void circuit_breaker_impl::settle_half_open(std::int64_t w, std::int64_t now_ms,
                                            bool bad) noexcept {
  if (bad) {
    transition(w, breaker_state::open, now_ms + recovery_ms_, 1.0);
  } else {
    // A good probe closes with a fresh window (Sentinel's resetStat). Emptied before the CAS so
    // no request can trip the closed breaker on the old counts; while HALF_OPEN they are unused.
    window_.reset();
    transition(w, breaker_state::closed, retry_of(w), std::nullopt);
  }
}

void circuit_breaker_impl::open_from_closed(std::int64_t w, std::int64_t now_ms,
                                            double value) noexcept {
  // Sentinel's transformToOpen: only a CLOSED breaker opens here (OPEN stays as it is; a
  // HALF_OPEN one is settled by the request that completes while it is half open).
  while (state_of(w) == breaker_state::closed) {
    if (transition(w, breaker_state::open, now_ms + recovery_ms_, value)) {
      return;
    }
  }
}

}  // namespace detail
}  // namespace floodgate
