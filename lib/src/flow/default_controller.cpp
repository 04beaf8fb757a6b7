#include "flow/default_controller.hpp"
#include "flow/qps_window.hpp"

#include <algorithm>

namespace floodgate::flow {

slot_verdict default_controller::check(const flow_request& req, const selected_node& node,
                                       bool can_hold, flow_booking& booking) noexcept {
  // Reservations count the admissions the node does not show yet. One counter per rule serves
  // only where every entry the rule checks reads the same node: a CHAIN rule's context node. An
  // `other` rule reads each origin's own node (one origin's reservations must not hold back
  // another), and RELATE another resource's, which this entry never writes.
  const bool can_reserve = can_hold && node.chain != nullptr;
  if (grade_ == flow_grade::concurrency) {
    if (node.exclusive && can_hold) {
      return check_concurrency(req, *node.stats, booking);
    }
    const std::int64_t reserved = reserve(req.acquire, can_reserve, booking);
    if (static_cast<double>(node.stats->concurrency() + reserved) > count_) {
      if (booking.reserved) {
        unreserve(req.acquire);
        booking.reserved = false;
      }
      return flow_blocked(0);
    }
    return slot_verdict::pass();
  }
  const window_shape shape(*node.stats);
  if (node.exclusive && admission_window::supports(shape)) {
    const auto a = admissions_.admit(req.now_ms, req.acquire, count_, shape);
    if (a.admitted) {
      booking.admitted_window = a.window;
      return slot_verdict::pass();
    }
    return over_limit(req, node, booking, shape, a.retry_after_ms);
  }
  return check_qps_on_node(req, node, can_reserve, booking);
}

std::int64_t default_controller::reserve(std::uint32_t acquire, bool can_reserve,
                                         flow_booking& booking) noexcept {
  if (!can_reserve) {
    return acquire;
  }
  booking.reserved = true;
  return pending_.fetch_add(acquire, std::memory_order_acq_rel) + acquire;
}

slot_verdict default_controller::over_limit(const flow_request& req, const selected_node& node,
                                            flow_booking& booking, const window_shape& shape,
                                            std::int64_t retry_after_ms) noexcept {
  if (req.prioritized) {
    const auto o =
        admissions_.occupy_next(req.now_ms, req.acquire, count_, req.occupy_timeout_ms, shape);
    if (o.booked) {
      booking.pass_booked = node.book_occupied(req.now_ms, o.start_ms, req.acquire);
      booking.admitted_window = o.window;
      return slot_verdict::wait(o.start_ms * 1'000'000 - req.now_ns);
    }
  }
  return flow_blocked(retry_after_ms);
}

slot_verdict default_controller::check_qps_on_node(const flow_request& req,
                                                   const selected_node& node, bool can_reserve,
                                                   flow_booking& booking) noexcept {
  const auto& stats = *node.stats;
  const std::int64_t reserved = reserve(req.acquire, can_reserve, booking);
  // Sentinel truncates: (int) passQps.
  const auto passes = static_cast<std::int64_t>(stats.pass_qps(req.now_ms));
  if (static_cast<double>(passes + reserved) <= count_) {
    return slot_verdict::pass();
  }
  if (booking.reserved) {
    unreserve(req.acquire);
    booking.reserved = false;
  }
  if (req.prioritized && (node.chain != nullptr || node.writable != nullptr)) {
    const std::int64_t wait_ms =
        stats.try_occupy_next(req.now_ms, req.acquire, count_, req.occupy_timeout_ms);
    if (wait_ms < req.occupy_timeout_ms) {
      booking.pass_booked = node.book_occupied(req.now_ms, req.now_ms + wait_ms, req.acquire);
      return slot_verdict::wait(
          std::max<std::int64_t>(1, wait_ms * 1'000'000 - req.now_ns % 1'000'000));
    }
  }
  return flow_blocked(window_retry_after_ms(stats, req.now_ms, req.acquire, count_));
}

slot_verdict default_controller::check_concurrency(const flow_request& req,
                                                   const stat::statistic_node& node,
                                                   flow_booking& booking) noexcept {
  // Each entry holds one slot; `acquire` only raises the bar, as Sentinel's curThreadNum + acquire.
  const auto need = static_cast<std::int64_t>(std::max<std::uint32_t>(req.acquire, 1));
  // Entries admitted before this rule existed hold none of its slots, but the resource's live
  // in-flight count shows them: a rule loaded while 500 are in flight admits nothing until they
  // drop below its count. (The node counts this rule's own entries too, a moment after they
  // took their slot; the larger of the two is a lower bound of what is in flight.)
  const std::int64_t live = node.concurrency();
  std::atomic<std::int64_t>& slots = this->slots();
  std::int64_t cur = slots.load(std::memory_order_acquire);
  do {
    if (static_cast<double>(std::max(cur, live) + need) > count_) {
      return flow_blocked(0);
    }
  } while (!slots.compare_exchange_weak(cur, cur + 1, std::memory_order_acq_rel,
                                        std::memory_order_acquire));
  booking.held = true;
  return slot_verdict::pass();
}

}  // namespace floodgate::flow
