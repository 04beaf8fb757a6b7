// When to ask Redis for a rule's next lease, how big, and what to hand back.
#pragma once

#include <floodgate/chain/cluster_lease.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

namespace floodgate::cluster::detail {

/// One lease request: passes wanted, and unspent passes handed back to the bucket they came from.
struct lease_ask {
  std::uint32_t asked = 0;
  std::uint32_t returned = 0;
  std::int64_t returned_bucket = -1;
  /** Asked with no demand in the last window (the minimum lease of a quiet instance): the store
      grants it only while nobody in the fleet was refused passes within a window and a bucket
      (lease_script), so quiet instances never hold passes a busy one is short of. */
  bool speculative = false;
};

/// The store's answer (lease_script).
struct lease_reply {
  std::int64_t granted = 0;
  std::int64_t bucket = 0;
  std::int64_t left_ms = 0;   ///< time left in the bucket, on the store's clock
  std::int64_t retry_ms = 0;  ///< when the window is full: time until its oldest bucket leaves
  /// How long the fleet stays short of passes (an ask was granted less than it asked for), 0 when
  /// it is not.
  std::int64_t short_ms = 0;
};

/** Why `reply` cannot be the lease script's answer to `ask`, or empty when it can be: a grant
    outside 0..asked, a negative bucket, or times no window of lease_planner's buckets gives.
    Taken as it came, such a reply would steer the rule while the store answers correctly
    again: a grant of a million passes admits them all, a retry in eleven days stops asking. */
std::string implausible(const lease_reply& reply, const lease_ask& ask);

/** The lease logic of one rule, driven by the adapter's thread with the engine's clock (tests use
    a manual clock). Keeps a lease of at least one pass in every bucket while the rule exists, so
    a request never finds the lease empty just because traffic was quiet — but a quiet instance's
    (no demand within a window) is asked for speculatively, which the store refuses while the
    fleet is short of passes (lease_ask::speculative): it is then asked for again in the next
    bucket, or at once when a request misses it. Sizes a lease to 1.5x the rule's recent demand
    (passes spent plus passes missed) per bucket, and an empty lease that requests missed to 1.5x
    the demand since it was granted and at least a bucket's share of the limit, so a burst after
    a quiet spell is served within a round trip or two; capped at the limit. While the store says
    the fleet is short of passes (lease_reply::short_ms), asks for the demand alone, without the
    margin or the bucket's share: a pass one instance holds unspent at the end of its bucket is
    one the others were refused, and the window, full of grants, loses it for a second. Hands back what expired unspent with the next request; and waits for the
    window to free before asking again when the store said it is full, unless it has unspent
    passes to hand back.

    @par Thread Safety
    Not thread-safe: one owner thread (the lease itself is shared with request threads).
*/
class lease_planner {
 public:
  static constexpr std::int64_t bucket_ms = 100;
  static constexpr std::int64_t buckets = 10;
  static constexpr std::int64_t window_ms = bucket_ms * buckets;
  /// A lease ends this much before its bucket does on the local clock: Redis's TIME and the
  /// request threads' readings are whole milliseconds, each up to 1 ms behind the instant.
  static constexpr std::int64_t expiry_margin_ms = 2;

  /** Expires the lease when its bucket is over and says whether to ask now; `limit` is the
      rule's shared count. */
  std::optional<lease_ask> plan(cluster_lease& lease, std::int64_t now_ms, double limit);
  /// Applies the answer to `ask`, sent at `sent_ms` (engine clock).
  void on_reply(cluster_lease& lease, const lease_ask& ask, const lease_reply& reply,
                std::int64_t sent_ms);

  /** The request carrying `ask` failed (timeout, I/O error, error reply). A timeout may come
      after the store ran the script, so whether it took the hand-back is unknown: it is dropped
      rather than sent again, which could free the same passes twice (errs towards fewer). */
  void on_failure(const lease_ask& ask) noexcept;

  /// Passes spent from leases so far (those of the lease in hand once it ends).
  std::uint64_t spent() const noexcept { return spent_; }
  /// Passes spent from leases so far, the lease in hand's included.
  std::uint64_t spent_with(const cluster_lease& lease) const noexcept {
    return spent_ + (bucket_ >= 0 ? granted_ - std::min(granted_, lease.available()) : 0);
  }
  /// The lease's bucket, -1 when none is held.
  std::int64_t bucket() const noexcept { return bucket_; }
  /// Estimated demand, passes per second.
  double demand_per_second() const noexcept { return rate_; }

 private:
  void settle(std::uint32_t unspent, std::int64_t now_ms) noexcept;
  /// The hand-back `ask` carried is no longer pending (taken, or dropped).
  void forget_returned(const lease_ask& ask) noexcept;

  std::int64_t bucket_ = -1;
  std::int64_t expires_ms_ = 0;
  /// The last grant's bucket has surely ended on the store's clock from here (engine clock): an
  /// ask sent before it would be granted passes of that bucket, over on arrival.
  std::int64_t bucket_over_ms_ = 0;
  std::uint32_t granted_ = 0;
  std::uint32_t returned_ = 0;
  std::int64_t returned_bucket_ = -1;
  std::int64_t next_ask_ms_ = 0;
  std::int64_t next_speculative_ms_ = 0;  // a refused speculative ask waits for the next bucket
  std::int64_t short_until_ms_ = 0;       // the fleet is short of passes until then
  std::int64_t last_demand_ms_ = -window_ms;  // last pass spent or missed; quiet before the first
  std::uint64_t demand_ = 0;  // passes spent or missed since the last estimate
  std::int64_t estimated_at_ms_ = -1;
  double rate_ = 0;
  std::uint64_t spent_ = 0;
};

}  // namespace floodgate::cluster::detail
