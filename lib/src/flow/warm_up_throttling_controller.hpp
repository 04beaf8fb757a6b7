// Warm-up with throttling (Sentinel's WarmUpRateLimiterController).
#pragma once

#include <floodgate/chain/slot.hpp>
#include "flow/flow_request.hpp"
#include "flow/throttling_controller.hpp"
#include "flow/warm_up_controller.hpp"
#include "stat/statistic_node.hpp"

#include <cstdint>

namespace floodgate::flow {

/** Evenly spaced admissions whose rate warms up like @ref warm_up_controller.

    Each request syncs the token bucket with the node's previous-second passes (it does not look
    at the current pass QPS), takes the bucket's current limit as the rate, and is scheduled by a
    @ref throttling_controller with a spacing of `acquire / rate`. Spacing is computed in
    nanoseconds (Sentinel rounds it to milliseconds). Where the bucket has no room to warm up
    (`period * count < 2`) the rule throttles at `count` (Sentinel's NaN rate lets everything
    through).

    @par Thread Safety
    Lock-free; any number of threads.
*/
class warm_up_throttling_controller {
 public:
  warm_up_throttling_controller(double count, std::int32_t warm_up_period_sec,
                                std::int32_t max_queueing_time_ms,
                                int cold_factor = warm_up_controller::default_cold_factor) noexcept
      : bucket_(count, warm_up_period_sec, cold_factor), schedule_(count, max_queueing_time_ms) {}

  /// Syncs the bucket with `node`'s previous second, then schedules the request.
  slot_verdict check(const flow_request& req, const stat::statistic_node& node,
                     flow_booking& booking) noexcept;
  /// check() when nothing needs giving back.
  slot_verdict check(const flow_request& req, const stat::statistic_node& node) noexcept {
    flow_booking unused;
    return check(req, node, unused);
  }

  /// See throttling_controller::unqueue.
  void unqueue(std::int64_t from_ns, std::int64_t to_ns) noexcept {
    schedule_.unqueue(from_ns, to_ns);
  }

  /// The token bucket that sets the rate.
  const warm_up_controller& bucket() const noexcept { return bucket_; }

 private:
  warm_up_controller bucket_;
  throttling_controller schedule_;
};

}  // namespace floodgate::flow
