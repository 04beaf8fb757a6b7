// The throttling controller (Sentinel's ThrottlingController, formerly RateLimiterController).
#pragma once

#include <floodgate/chain/slot.hpp>
#include "flow/flow_request.hpp"

#include <atomic>
#include <cstdint>

namespace floodgate::flow {

/** Spaces admissions evenly, `1000 / count` ms apart, queueing requests instead of rejecting them.

    The schedule is the time the latest admitted request passes (`latest_passed`). A request that
    would pass at `latest_passed + cost` or earlier passes now; one that can be scheduled within
    `maxQueueingTimeMs` is told to wait until its turn (the caller waits; nothing sleeps here);
    one that would wait longer is blocked, with the time until the queue has room.

    Time is in nanoseconds throughout (Sentinel switches to nanoseconds only for counts that do
    not divide 1000 or exceed 1000), so counts above 1000 are spaced below a millisecond. The
    schedule advances by compare-and-swap: under any number of racing threads, admitted requests
    are never closer than `cost` (Sentinel's add-then-undo can let two through at once).

    @par Thread Safety
    Lock-free; any number of threads.
*/
class throttling_controller {
 public:
  throttling_controller(double count, std::int32_t max_queueing_time_ms) noexcept;

  /// Sentinel's canPass: `acquire == 0` passes, `count <= 0` blocks. A pass or a wait records
  /// in `booking` how it moved the schedule.
  slot_verdict check(const flow_request& req, flow_booking& booking) noexcept;
  /// check() when nothing needs giving back.
  slot_verdict check(const flow_request& req) noexcept {
    flow_booking unused;
    return check(req, unused);
  }

  /** Schedules one request that takes `cost_ns` of the schedule: pass, wait, or block. Shared
      with @ref warm_up_throttling_controller, whose cost changes as it warms up. */
  slot_verdict queue(std::int64_t now_ns, std::int64_t cost_ns, flow_booking& booking) noexcept;

  /** Gives back a place a later rule made useless (the request was blocked after all): the
      schedule returns from `to_ns` to `from_ns` unless a later request queued behind it (its
      place is then kept: giving it back would let the next two through closer than `cost`). */
  void unqueue(std::int64_t from_ns, std::int64_t to_ns) noexcept;

  /// Nanoseconds one request of `acquire` tokens takes at `qps`.
  static std::int64_t cost_ns(std::uint32_t acquire, double qps) noexcept;

  /// The rule's rate and longest queueing time.
  double count() const noexcept { return count_; }

 private:
  double count_;
  std::int64_t max_queueing_ns_;
  alignas(64) std::atomic<std::int64_t> latest_passed_ns_;
};

}  // namespace floodgate::flow
