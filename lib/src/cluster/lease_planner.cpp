#include "cluster/lease_planner.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>

namespace floodgate::cluster::detail {

std::string implausible(const lease_reply& reply, const lease_ask& ask) {
  auto outside = [](std::string_view what, std::int64_t v, std::int64_t low, std::int64_t high) {
    return std::string(what) + " " + std::to_string(v) + " is outside " + std::to_string(low) +
           ".." + std::to_string(high);
  };
  const std::int64_t window = lease_planner::window_ms;
  if (reply.granted < 0 || reply.granted > ask.asked) {
    return outside("granted", reply.granted, 0, ask.asked);
  }
  if (reply.bucket < 0) return "bucket " + std::to_string(reply.bucket) + " is negative";
  if (reply.left_ms < 1 || reply.left_ms > lease_planner::bucket_ms) {
    return outside("ms left in the bucket", reply.left_ms, 1, lease_planner::bucket_ms);
  }
  if (reply.retry_ms < 0 || reply.retry_ms > window) {
    return outside("retry ms", reply.retry_ms, 0, window);
  }
  if (reply.short_ms < 0 || reply.short_ms > window + lease_planner::bucket_ms) {
    return outside("short ms", reply.short_ms, 0, window + lease_planner::bucket_ms);
  }
  return {};
}

void lease_planner::settle(std::uint32_t unspent, std::int64_t now_ms) noexcept {
  const std::uint32_t used = granted_ > unspent ? granted_ - unspent : 0;
  spent_ += used;
  demand_ += used;
  if (used > 0) last_demand_ms_ = now_ms;
  if (unspent > 0 && bucket_ >= 0) {
    // One pending hand-back at a time; an older one not yet sent is dropped (errs towards fewer).
    returned_ = returned_bucket_ == bucket_ ? returned_ + unspent : unspent;
    returned_bucket_ = bucket_;
  }
  granted_ = 0;
}

std::optional<lease_ask> lease_planner::plan(cluster_lease& lease, std::int64_t now_ms,
                                             double limit) {
  const std::uint64_t misses = lease.take_misses();
  demand_ += misses;
  // Passes of the lease in hand spent so far (settled when it ends) plus the misses: the demand
  // since that lease was granted.
  const std::uint32_t taken =
      bucket_ >= 0 ? granted_ - std::min(granted_, lease.available()) : 0;
  if (misses > 0 || taken > 0) last_demand_ms_ = now_ms;
  const std::uint64_t burst = misses + taken;
  if (bucket_ >= 0 && now_ms >= expires_ms_) {
    settle(lease.revoke(), now_ms);
    bucket_ = -1;
  }
  if (estimated_at_ms_ < 0) {
    estimated_at_ms_ = now_ms;
  } else if (now_ms - estimated_at_ms_ >= bucket_ms) {
    const double recent = static_cast<double>(demand_) * 1000.0 /
                          static_cast<double>(now_ms - estimated_at_ms_);
    rate_ = rate_ == 0 ? recent : 0.5 * rate_ + 0.5 * recent;
    demand_ = 0;
    estimated_at_ms_ = now_ms;
  }
  const bool empty = bucket_ < 0 || (lease.available() == 0 && misses > 0);
  // After a short grant the window stays full until its oldest bucket leaves (next_ask_ms_),
  // unless this lease's own unspent passes fill it: handing them back frees that room now, and
  // a request carries them, so one is sent at once. Waiting would hold them until then and
  // refuse requests below the limit (at 9 a second against a count of 10, one a second).
  if (!empty || (now_ms < next_ask_ms_ && returned_ == 0)) {
    return std::nullopt;
  }
  // A lease ends expiry_margin_ms before its bucket on this clock; the store's bucket ends up to
  // expiry_margin_ms after (`sent` and TIME are each read up to 1 ms late). Asked before then, the
  // store would still be in that bucket and grant passes that expire on arrival.
  if (bucket_ < 0 && now_ms < bucket_over_ms_) {
    return std::nullopt;
  }
  const bool speculative = misses == 0 && now_ms - last_demand_ms_ >= window_ms;
  if (speculative && now_ms < next_speculative_ms_ && returned_ == 0) {
    return std::nullopt;
  }
  const double cap = std::max(1.0, std::floor(limit));
  // Requests missed the lease: at least 1.5x the demand since it was granted, and at least a
  // bucket's share of the limit (what is left unspent goes back when the bucket ends). While the
  // fleet is short, the demand alone.
  const bool fleet_short = now_ms < short_until_ms_;
  const double margin = fleet_short ? 1.0 : 1.5;
  const double share = fleet_short ? 0.0 : std::floor(cap / static_cast<double>(buckets));
  const double refill =
      misses > 0 ? std::max(std::ceil(static_cast<double>(burst) * margin), share) : 0.0;
  const double per_bucket =
      std::max(std::ceil(rate_ * static_cast<double>(bucket_ms) / 1000.0 * margin), refill);
  lease_ask ask;
  ask.asked = static_cast<std::uint32_t>(std::clamp(per_bucket, 1.0, std::min(cap, 1e9)));
  ask.returned = returned_;
  ask.returned_bucket = returned_bucket_;
  ask.speculative = speculative;
  return ask;
}

void lease_planner::forget_returned(const lease_ask& ask) noexcept {
  if (ask.returned > 0 && ask.returned_bucket == returned_bucket_) {
    returned_ -= std::min(returned_, ask.returned);
    if (returned_ == 0) returned_bucket_ = -1;
  }
}

void lease_planner::on_failure(const lease_ask& ask) noexcept { forget_returned(ask); }

void lease_planner::on_reply(cluster_lease& lease, const lease_ask& ask, const lease_reply& reply,
                             std::int64_t sent_ms) {
  forget_returned(ask);
  short_until_ms_ = sent_ms + std::max<std::int64_t>(reply.short_ms, 0);
  if (ask.speculative && reply.granted <= 0) {
    // Refused because the fleet is short of passes (or the window is full): a quiet instance
    // asks again in the next bucket, and a request that misses asks at once.
    next_speculative_ms_ = sent_ms + std::max<std::int64_t>(reply.left_ms, 1);
  }
  next_ask_ms_ = reply.granted < ask.asked ? sent_ms + std::max<std::int64_t>(reply.retry_ms, 1)
                                           : 0;
  if (reply.granted <= 0) {
    return;
  }
  // The store ran the script after we sent it: its bucket ends no earlier than sent + left.
  const std::int64_t expires = sent_ms + reply.left_ms - expiry_margin_ms;
  if (bucket_ >= 0) {
    settle(lease.revoke(), sent_ms);
  }
  bucket_ = reply.bucket;
  granted_ = static_cast<std::uint32_t>(reply.granted);
  expires_ms_ = expires;
  bucket_over_ms_ = sent_ms + reply.left_ms + expiry_margin_ms;
  lease.grant(granted_, expires);  // empty since the revoke: request threads only take
}

}  // namespace floodgate::cluster::detail
