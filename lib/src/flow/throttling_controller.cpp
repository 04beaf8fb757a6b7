#include "flow/throttling_controller.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace floodgate::flow {

namespace {

// Sentinel starts latestPassedTime at -1: the first request always passes.
constexpr std::int64_t never_passed = std::numeric_limits<std::int64_t>::min();
// Longest spacing kept (about 3 years); beyond it a count is as good as zero.
constexpr double max_cost_ns = 1e17;

slot_verdict blocked(std::int64_t retry_after_ns) noexcept {
  block_info b;
  b.reason = block_reason::flow;
  b.retry_after = std::chrono::milliseconds(
      retry_after_ns <= 0 ? 0 : std::max<std::int64_t>(1, (retry_after_ns + 999'999) / 1'000'000));
  return slot_verdict::blocked(b);
}

}  // namespace

throttling_controller::throttling_controller(double count,
                                             std::int32_t max_queueing_time_ms) noexcept
    : count_(count),
      max_queueing_ns_(std::int64_t{max_queueing_time_ms} * 1'000'000),
      latest_passed_ns_(never_passed) {}

std::int64_t throttling_controller::cost_ns(std::uint32_t acquire, double qps) noexcept {
  const double cost = std::round(1e9 * acquire / qps);
  return static_cast<std::int64_t>(std::min(cost, max_cost_ns));
}

slot_verdict throttling_controller::check(const flow_request& req,
                                          flow_booking& booking) noexcept {
  if (req.acquire == 0) {
    return slot_verdict::pass();
  }
  if (!(count_ > 0)) {
    return blocked(0);
  }
  return queue(req.now_ns, cost_ns(req.acquire, count_), booking);
}

void throttling_controller::unqueue(std::int64_t from_ns, std::int64_t to_ns) noexcept {
  std::int64_t expected = to_ns;
  latest_passed_ns_.compare_exchange_strong(expected, from_ns, std::memory_order_acq_rel,
                                            std::memory_order_acquire);
}

slot_verdict throttling_controller::queue(std::int64_t now_ns, std::int64_t cost,
                                          flow_booking& booking) noexcept {
  std::int64_t latest = latest_passed_ns_.load(std::memory_order_acquire);
  for (;;) {
    if (latest == never_passed || latest + cost <= now_ns) {
      const std::int64_t from = latest;
      if (latest_passed_ns_.compare_exchange_weak(latest, now_ns, std::memory_order_acq_rel,
                                                  std::memory_order_acquire)) {
        booking.queued = true;
        booking.queue_from_ns = from;
        booking.queue_to_ns = now_ns;
        return slot_verdict::pass();
      }
      continue;
    }
    const std::int64_t turn = latest + cost;
    const std::int64_t wait = turn - now_ns;
    if (wait > max_queueing_ns_) {
      return blocked(wait - max_queueing_ns_);
    }
    const std::int64_t from = latest;
    if (latest_passed_ns_.compare_exchange_weak(latest, turn, std::memory_order_acq_rel,
                                                std::memory_order_acquire)) {
      booking.queued = true;
      booking.queue_from_ns = from;
      booking.queue_to_ns = turn;
      return slot_verdict::wait(wait);
    }
  }
}

}  // namespace floodgate::flow
