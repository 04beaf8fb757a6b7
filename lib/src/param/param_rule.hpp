// One compiled hot-parameter rule: its thresholds and its bounded per-value state.
#pragma once

#include "param/value_key.hpp"
#include "param/value_table.hpp"

#include <floodgate/core/slot.hpp>
#include <floodgate/param/param_flow_rule.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace floodgate::param_detail {

/// Sentinel's bound on the values one rule tracks: min(4000 × durationInSec, 200000).
std::size_t value_capacity(const param_flow_rule& rule) noexcept;

/** The state of a rule that survives reloads while the rule is unchanged: the per-value table,
    the seed its keys were made with, and the origin of its token-bucket clock. */
struct rule_state {
  explicit rule_state(const param_flow_rule& rule);
  std::uint64_t seed;
  value_table table;
  /// now_ms of the first token-bucket check; bucket times are stored relative to it.
  std::atomic<std::int64_t> epoch_ms;
};

/** One rule as checked on the request path. Built on the control plane; check() and release
    are noexcept, lock-free (see value_table) and never allocate.

    QPS grade, reject: Sentinel's passDefaultLocalCheck token bucket per value. QPS grade,
    throttling: passThrottleLocalCheck spacing per value, with the wait returned instead of
    slept. Concurrency grade: in-flight entries per value, counted at check and released when the
    entry exits or a later slot blocks it. */
class param_rule {
 public:
  param_rule(const param_flow_rule& rule, std::int32_t index, std::shared_ptr<rule_state> state);

  const param_flow_rule& rule() const noexcept { return rule_; }
  const std::shared_ptr<rule_state>& state() const noexcept { return state_; }

  /// Checks the entry's value of this rule's parameter; a missing value passes.
  slot_verdict check(const check_context& ctx, entry_tokens& tokens) const noexcept;

 private:
  struct item {
    value_key key;
    double count;
  };

  /// What one value's check decided, in two registers: pass, wait (`value` ns) or block
  /// (`value` = retry-after ms); check() turns it into the slot's verdict.
  struct decision {
    slot_verdict::kind outcome;
    std::int64_t value;
  };
  static constexpr decision pass() noexcept { return {slot_verdict::kind::pass, 0}; }
  static constexpr decision refuse(std::int64_t retry_after_ms) noexcept {
    return {slot_verdict::kind::block, retry_after_ms};
  }

  bool value_of(const check_context& ctx, param_value& out) const noexcept;
  double threshold_of(const value_key& key) const noexcept;
  decision check_tokens(const check_context& ctx, const value_key& key,
                        std::int64_t token_count) const noexcept;
  decision check_spacing(const check_context& ctx, const value_key& key,
                         std::int64_t token_count) const noexcept;
  decision check_in_flight(const value_key& key, double threshold,
                           entry_tokens& tokens) const noexcept;
  std::int64_t bucket_time(std::int64_t now_ms) const noexcept;

  param_flow_rule rule_;
  std::int32_t index_;
  std::shared_ptr<rule_state> state_;
  std::vector<item> items_;  // sorted by key
  std::int64_t duration_ms_;
};

}  // namespace floodgate::param_detail
