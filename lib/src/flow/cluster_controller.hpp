// The controller of a clusterMode flow rule: leased passes, or a local limit while falling back.
#pragma once

#include <floodgate/chain/cluster_lease.hpp>
#include <floodgate/chain/slot.hpp>
#include "flow/admission_window.hpp"
#include "flow/flow_request.hpp"

#include <memory>

namespace floodgate::flow {

/** The time a lease is spent at, in ms: a pass must be spent inside the store's bucket that
    recorded it. The entry's own time when it was read from the clock for this entry; otherwise a
    fresh read, never the millisecond word a ticker thread refreshes (a busy machine may not run
    it for milliseconds) nor CLOCK_MONOTONIC_COARSE (in a VM its tick was measured 7.6 ms late
    idle and 31 ms under load, which let a pass through after its bucket had ended). */
inline std::int64_t lease_time_ms(std::int64_t now_ms, bool now_is_fresh,
                                  const clock* time) noexcept {
  return now_is_fresh || time == nullptr ? now_ms : ns_to_ms(time->now_ns());
}

/** Decides a clusterMode rule (QPS, reject, strategy direct) for one entry.

    - global: a pass is one taken from the rule's @ref cluster_lease (one compare-and-swap);
      nothing left blocks, and the miss tells the token source to lease more. No request waits
      for the network: the source refills the lease from its own thread.
    - fallback_local: the rule's own admission window with the lease's fallback count.
    - fallback_pass: passes, counted on the lease.

    @par Thread Safety
    Lock-free; any number of threads.
*/
class cluster_controller {
 public:
  cluster_controller() : lease_(std::make_shared<cluster_lease>()) {}

  slot_verdict check(const flow_request& req, const selected_node& node,
                     flow_booking& booking) noexcept;

  /// Gives back a fallback admission booked in `window`.
  void refund(std::int64_t window, std::uint32_t acquire) noexcept {
    fallback_.refund(window, acquire);
  }

  const std::shared_ptr<cluster_lease>& lease() const noexcept { return lease_; }

 private:
  std::shared_ptr<cluster_lease> lease_;
  admission_window fallback_;
};

}  // namespace floodgate::flow
