#include "flow/warm_up_throttling_controller.hpp"

#include "java_cast.hpp"

namespace floodgate::flow {

slot_verdict warm_up_throttling_controller::check(const flow_request& req,
                                                  const stat::statistic_node& node,
                                                  flow_booking& booking) noexcept {
  bucket_.sync_token(req.now_ms, detail::java_long(node.previous_pass_qps(req.now_ms)));
  if (req.acquire == 0) {
    return slot_verdict::pass();
  }
  const double rate = bucket_.allowed_qps(bucket_.stored_tokens());  // count without room to warm
  if (!(rate > 0)) {
    return flow_blocked(0);
  }
  return schedule_.queue(req.now_ns, throttling_controller::cost_ns(req.acquire, rate), booking);
}

}  // namespace floodgate::flow
