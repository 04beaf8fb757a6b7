#include "flow/cluster_controller.hpp"

#include "flow/qps_window.hpp"

#include <algorithm>

namespace floodgate::flow {

namespace {

// The shared window is one second on the store's clock; a refused pass may come back in a lease
// any time within it.
constexpr std::int64_t shared_window_ms = 1000;

}  // namespace

slot_verdict cluster_controller::check(const flow_request& req, const selected_node& node,
                                       flow_booking& booking) noexcept {
  switch (lease_->mode()) {
    case cluster_mode::global:
      if (lease_->try_take(req.acquire, lease_time_ms(req.now_ms, req.now_is_fresh, req.time))) {
        return slot_verdict::pass();
      }
      lease_->note_miss(req.acquire);
      return flow_blocked(shared_window_ms);
    case cluster_mode::fallback_pass:
      lease_->note_unchecked_pass();
      return slot_verdict::pass();
    case cluster_mode::fallback_local:
      break;
  }
  const double count = lease_->fallback_count();
  const window_shape shape(*node.stats);
  if (node.exclusive && admission_window::supports(shape)) {
    // The window counts the fallback's own bookings; the last window's leased passes are the
    // debt (the node's statistics, read below, already hold them).
    const double room = std::max(0.0, count - static_cast<double>(lease_->fallback_debt()));
    const auto a = fallback_.admit(req.now_ms, req.acquire, room, shape);
    if (a.admitted) {
      booking.admitted_window = a.window;
      lease_->note_fallback_pass(req.acquire);
      return slot_verdict::pass();
    }
    return flow_blocked(a.retry_after_ms);
  }
  const auto passes = static_cast<std::int64_t>(node.stats->pass_qps(req.now_ms));
  if (static_cast<double>(passes + req.acquire) <= count) {
    lease_->note_fallback_pass(req.acquire);
    return slot_verdict::pass();
  }
  return flow_blocked(window_retry_after_ms(*node.stats, req.now_ms, req.acquire, count));
}

}  // namespace floodgate::flow
