#include "flow/qps_window.hpp"
#include "flow/warm_up_controller.hpp"

#include "java_cast.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace floodgate::flow {

namespace {

using detail::java_int;
using detail::java_long;

// Sentinel's fill time starts at 0 (epoch), so its first refill always reaches max_token.
constexpr std::int64_t never_filled = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t first_fill_elapsed_ms = std::int64_t{1} << 52;

}  // namespace

warm_up_controller::warm_up_controller(double count, std::int32_t warm_up_period_sec,
                                       int cold_factor) noexcept
    : count_(count),
      // Sentinel's configuration falls back to 3 for a cold factor <= 1.
      cold_factor_(cold_factor > 1 ? cold_factor : default_cold_factor),
      last_filled_ms_(never_filled),
      spacing_(count, 0) {
  warning_token_ = java_int(warm_up_period_sec * count) / (cold_factor_ - 1);
  max_token_ = warning_token_ + java_int(2.0 * warm_up_period_sec * count / (1.0 + cold_factor_));
  slope_ = max_token_ > warning_token_ && count > 0
               ? (cold_factor_ - 1.0) / count / static_cast<double>(max_token_ - warning_token_)
               : std::numeric_limits<double>::infinity();
}

std::int64_t warm_up_controller::cool_down_tokens(std::int64_t old_tokens, std::int64_t elapsed_ms,
                                                  std::int64_t previous_pass_qps) const noexcept {
  std::int64_t tokens = old_tokens;
  const auto refill = [&] {
    return java_long(static_cast<double>(old_tokens) +
                     static_cast<double>(elapsed_ms) * count_ / 1000);
  };
  if (old_tokens < warning_token_) {
    tokens = refill();
  } else if (old_tokens > warning_token_ && previous_pass_qps < java_int(count_) / cold_factor_) {
    tokens = refill();
  }
  return std::min(tokens, max_token_);
}

void warm_up_controller::sync_token(std::int64_t now_ms, std::int64_t previous_pass_qps) noexcept {
  const std::int64_t second = now_ms - now_ms % 1000;
  std::int64_t filled = last_filled_ms_.load(std::memory_order_acquire);
  if (second <= filled ||
      !last_filled_ms_.compare_exchange_strong(filled, second, std::memory_order_acq_rel)) {
    return;
  }
  const std::int64_t elapsed = filled == never_filled ? first_fill_elapsed_ms : second - filled;
  const std::int64_t old_tokens = stored_tokens_.load(std::memory_order_acquire);
  const std::int64_t tokens = cool_down_tokens(old_tokens, elapsed, previous_pass_qps);
  stored_tokens_.store(std::max<std::int64_t>(tokens - previous_pass_qps, 0),
                       std::memory_order_release);
}

double warm_up_controller::allowed_qps(std::int64_t tokens) const noexcept {
  if (tokens < warning_token_) {
    return count_;
  }
  if (std::isinf(slope_)) {
    return count_;  // no room to warm up (Sentinel: 0 * Infinity, a NaN that blocks everything)
  }
  const double above = static_cast<double>(tokens - warning_token_);
  return std::nextafter(1.0 / (above * slope_ + 1.0 / count_),
                        std::numeric_limits<double>::infinity());
}

slot_verdict warm_up_controller::check(const flow_request& req, const stat::statistic_node& node,
                                       flow_booking& booking) noexcept {
  const std::int64_t passes = java_long(node.pass_qps(req.now_ms));
  sync_token(req.now_ms, java_long(node.previous_pass_qps(req.now_ms)));
  const double limit = allowed_qps(stored_tokens());
  if (static_cast<double>(passes + req.acquire) <= limit) {
    return slot_verdict::pass();
  }
  const auto acquire = static_cast<double>(req.acquire);
  if (!(passes == 0 && limit < acquire && acquire <= count_)) {
    return flow_blocked(window_retry_after_ms(node, req.now_ms, req.acquire, limit));
  }
  // A cold limit the window cannot hold (under `acquire` a second): passes spaced as throttling
  // spaces them, with no queueing, into an empty window only (an entry of a smaller `acquire`
  // may have passed by the limit itself).
  return spacing_.queue(req.now_ns, throttling_controller::cost_ns(req.acquire, limit), booking);
}

void warm_up_controller::unqueue(std::int64_t from_ns, std::int64_t to_ns) noexcept {
  spacing_.unqueue(from_ns, to_ns);
}

}  // namespace floodgate::flow
