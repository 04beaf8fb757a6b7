// What a flow controller sees of one entry: when, how many tokens, and which node the rule
// measures.
#pragma once

#include <floodgate/chain/slot.hpp>
#include "node/default_node.hpp"
#include "stat/statistic_node.hpp"

#include <chrono>
#include <cstdint>

namespace floodgate::flow {

/// A controller's refusal: a flow block, retry after `retry_after_ms` (0: unknown).
inline slot_verdict flow_blocked(std::int64_t retry_after_ms) noexcept {
  block_info b;
  b.reason = block_reason::flow;
  b.retry_after = std::chrono::milliseconds(retry_after_ms);
  return slot_verdict::blocked(b);
}

/** The part of an entry a controller needs. Built from a @ref check_context on the request path;
    tests build it from a manual clock. */
struct flow_request {
  std::int64_t now_ms = 0;
  std::int64_t now_ns = 0;
  std::uint32_t acquire = 1;
  bool prioritized = false;  ///< may borrow from a coming window (Sentinel's tryOccupyNext)
  std::int64_t occupy_timeout_ms = 500;
  /// The engine's clock, for controllers that need a fresh reading rather than the entry's
  /// (cheap, possibly a tick old) now_ms; null in tests that drive a controller by hand.
  const clock* time = nullptr;
  bool now_is_fresh = false;  ///< check_context::now_is_fresh

  /// The entry being checked.
  static flow_request from(const check_context& ctx) noexcept {
    return {ctx.now_ms,           ctx.now_ns, ctx.acquire, ctx.prioritized,
            ctx.occupy_timeout_ms, &ctx.time,  ctx.now_is_fresh};
  }
};

/** The node a flow rule measures for one entry (Sentinel's selectNodeByRequesterAndStrategy).

    `exclusive` says every pass this node counts for the rule's resource goes through the rule, so
    the rule's own counters (admission window, in-flight count) can decide exactly, with no
    check-then-act race. Otherwise the controller reads the node's statistics as Sentinel does.
*/
struct selected_node {
  const stat::statistic_node* stats = nullptr;  ///< null: the rule does not apply to this entry
  /// Where borrowed (prioritized) passes are booked; null when the node is another resource's.
  stat::statistic_node* writable = nullptr;
  /// Set for CHAIN: bookings go through the default node so its cluster node sees them too.
  node::default_node* chain = nullptr;
  bool exclusive = false;

  explicit operator bool() const noexcept { return stats != nullptr; }

  /// Books `n` passes borrowed into the window containing `future_ms` (Sentinel's
  /// addWaitingRequest + addOccupiedPass). False when the node cannot take bookings.
  bool book_occupied(std::int64_t now_ms, std::int64_t future_ms, std::uint32_t n) const noexcept {
    if (chain != nullptr) {
      chain->add_waiting(future_ms, n);
      chain->add_occupied_pass(now_ms, n);
      return true;
    }
    if (writable != nullptr) {
      writable->add_waiting(future_ms, n);
      writable->add_occupied_pass(now_ms, n);
      return true;
    }
    return false;
  }
};

/// What a controller took for an entry, for the slot to refund on a later block or release on exit.
struct flow_booking {
  std::int64_t admitted_window = -1;  ///< window of a pass booked in the rule's admission window
  bool held = false;                  ///< holds one of the rule's in-flight slots
  /// Holds a reservation of the rule (default_controller::unreserve once the pass is recorded).
  bool reserved = false;
  /// The pass was booked into a coming window of the node (prioritized borrowing): the statistic
  /// slot must not count it again (entry_tokens::pass_booked).
  bool pass_booked = false;
  /// A throttling rule (or a warm-up rule spacing cold passes) moved its schedule from
  /// `queue_from_ns` to `queue_to_ns` for this entry.
  bool queued = false;
  std::int64_t queue_from_ns = 0;
  std::int64_t queue_to_ns = 0;
};

}  // namespace floodgate::flow
