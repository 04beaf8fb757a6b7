// The reject controller (Sentinel's DefaultController): over the threshold, block at once.
#pragma once

#include <floodgate/chain/slot.hpp>
#include "flow/admission_window.hpp"
#include "flow/flow_request.hpp"
#include <floodgate/rules/flow_rule.hpp>

#include <atomic>
#include <cstdint>
#include <memory>

namespace floodgate::flow {

/** Reject behaviour for both grades, with no overshoot where the rule can count for itself.

    - QPS on an exclusive node (see @ref selected_node): passes are booked in the rule's own
      @ref admission_window, so the windowed pass count never exceeds `count`. A prioritized
      request over the limit books into a coming window instead and is told to wait until it
      starts; the node also gets Sentinel's waiting / occupied-pass bookings.
    - Concurrency on an exclusive node: an in-flight counter owned by the rule, raised only while
      below `count`, so never more than `count` entries hold it.
    - Otherwise (an `other` rule's per-origin node, a RELATE node, a CHAIN node shared with other
      origins): Sentinel's test on the node's own statistics — `(int) passQps + acquire > count`
      or `concurrency + acquire > count` blocks. On a CHAIN node the entries this rule admitted
      whose pass the node does not show yet count too: each admission holds a reservation
      until the statistic slot has recorded its pass (unreserve()), so threads racing between
      the check and the record do not overshoot. An `other` rule (a node per origin, which one
      counter per rule cannot stand for), RELATE (another resource's node, which this entry
      never writes) and a rule beyond the 32 tracked per resource keep Sentinel's
      check-then-act.

    A blocked QPS verdict carries the time until enough of the window slides out; a blocked
    concurrency verdict carries no retry time (a slot frees when some entry exits).

    @par Thread Safety
    Lock-free; any number of threads.
*/
class default_controller {
 public:
  default_controller(flow_grade grade, double count) : grade_(grade), count_(count) {}

  /** Decides one entry; `booking` receives what was taken. `can_hold` is false when the slot
      could not release an in-flight slot at exit (a rule beyond the 32 tracked per resource). */
  slot_verdict check(const flow_request& req, const selected_node& node, bool can_hold,
                     flow_booking& booking) noexcept;

  /// Gives back a QPS admission booked in `window`.
  /// The pass path of a QPS rule on an exclusive node, inline (admission_window::spend_lease).
  bool spend_lease(std::int64_t window, std::uint32_t acquire, stat::writer_shard ws) noexcept {
    return admissions_.spend_lease(window, acquire, ws);
  }

  void refund(std::int64_t window, std::uint32_t acquire) noexcept {
    admissions_.refund(window, acquire);
  }
  /// Starts a new QPS rule from the passes `node` recorded in the current interval.
  void seed(const stat::statistic_node& node, std::int64_t now_ms) noexcept {
    if (grade_ == flow_grade::qps) {
      admissions_.seed(node, now_ms, window_shape(node));
    }
  }
  /// Gives back an in-flight slot.
  void release() noexcept { slots().fetch_sub(1, std::memory_order_acq_rel); }
  /** A changed concurrency rule takes over its predecessor's in-flight slots (`earlier`, kept
      alive by `owner`): the entries the old rule admitted hold them until they exit, so the new
      rule counts them from the first instant, not only once the node shows them. */
  void take_over_slots(default_controller& earlier, std::shared_ptr<const void> owner) noexcept {
    slots_ = earlier.slots_ != nullptr ? earlier.slots_ : &earlier.in_flight_;
    slots_owner_ = earlier.slots_owner_ ? earlier.slots_owner_ : std::move(owner);
  }
  /** Ends a reservation (flow_booking::reserved) once the entry's pass is on the node, or it
      was blocked. Release: a check that finds the reservation gone sees the recorded pass. */
  void unreserve(std::uint32_t acquire) noexcept {
    pending_.fetch_sub(acquire, std::memory_order_acq_rel);
  }

  /// The rule's grade and threshold.
  flow_grade grade() const noexcept { return grade_; }
  double count() const noexcept { return count_; }
  /// Entries holding one of this rule's in-flight slots.
  std::int64_t in_flight() const noexcept {
    return (slots_ != nullptr ? *slots_ : in_flight_).load(std::memory_order_acquire);
  }
  /// The QPS bookings (exclusive nodes only).
  const admission_window& admissions() const noexcept { return admissions_; }

 private:
  slot_verdict over_limit(const flow_request& req, const selected_node& node, flow_booking& booking,
                          const window_shape& shape, std::int64_t retry_after_ms) noexcept;
  slot_verdict check_qps_on_node(const flow_request& req, const selected_node& node,
                                 bool can_reserve, flow_booking& booking) noexcept;
  /// Reserves `acquire` and returns what this rule's admissions not yet recorded add up to,
  /// this one's included; 0 reserved when `can_reserve` is false.
  std::int64_t reserve(std::uint32_t acquire, bool can_reserve, flow_booking& booking) noexcept;
  slot_verdict check_concurrency(const flow_request& req, const stat::statistic_node& node,
                                 flow_booking& booking) noexcept;

  // A QPS rule writes only its admission window, a concurrency rule only `in_flight_`: the
  // two never contend, so `in_flight_` needs no line of its own. `pending_` is written only
  // by rules on a shared node, which write neither.
  flow_grade grade_;
  double count_;
  std::atomic<std::int64_t> in_flight_{0};
  std::atomic<std::int64_t>* slots_ = nullptr;  // a predecessor's in_flight_ it took over
  std::shared_ptr<const void> slots_owner_;     // keeps that predecessor alive
  std::atomic<std::int64_t>& slots() noexcept { return slots_ != nullptr ? *slots_ : in_flight_; }
  std::atomic<std::int64_t> pending_{0};
  admission_window admissions_;
};

}  // namespace floodgate::flow
