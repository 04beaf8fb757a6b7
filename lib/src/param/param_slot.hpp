// The param-flow slot: hot-parameter limits per distinct argument value.
#pragma once

#include <floodgate/chain/slot.hpp>
#include <floodgate/rules/param_flow_rule.hpp>
#include "rules/indexed_rule.hpp"

#include <cstddef>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

namespace floodgate {

namespace param_detail {
class hot_key_tracker;
}

/** The param-flow rules of one resource with their bounded per-value state. State of rules equal
    to one in `previous` carries over.

    Each rule keeps state for at most min(4000 × durationInSec, 200000) distinct values (Sentinel's
    bound), allocated when the rule is built; a new value evicts a cold one. Values are matched by
    their text (an integer argument by its decimal form), so items written as strings apply to
    integer arguments too.

    @par Thread Safety
    check(), on_blocked_later() and on_exit() are lock-free for known values and never allocate;
    any number of threads.
*/
class resource_param_rules {
 public:
  /// Compiles one resource's rules, sharing the state of rules equal to ones in `previous`.
  /// With `track_values`, each rule also tracks its values' request counts (hot keys).
  static std::unique_ptr<resource_param_rules> build(
      std::vector<indexed_rule<param_flow_rule>> rules, const resource_param_rules* previous,
      bool track_values);
  ~resource_param_rules();

  /** Checks every rule against the entry's value of its parameter (a missing value passes).
      Blocks with reason `param_flow`, or asks to wait (throttling; the waits of several rules
      add up). Concurrency rules count the entry in `tokens` until on_exit(). */
  slot_verdict check(const check_context& ctx, entry_tokens& tokens) const noexcept;
  /// Releases what check() took when a later slot blocks the entry.
  void on_blocked_later(const check_context& ctx, entry_tokens& tokens) const noexcept;
  /// Releases the entry's per-value in-flight counts.
  void on_exit(const exit_context& ctx, entry_tokens& tokens) const noexcept;

  /// Distinct values that currently have state, over all rules; never above value_capacity().
  std::size_t tracked_values() const noexcept;
  /// The most values all rules together keep state for.
  std::size_t value_capacity() const noexcept;

  /// Calls `f(rule, index, tracker)` for every rule that tracks its values (control plane).
  void for_each_tracker(const std::function<void(const param_flow_rule&, std::int32_t,
                                                 const param_detail::hot_key_tracker&)>& f) const;
  /// Whether any rule's tracker finds `value` hot at `now_ms`; lock-free, never allocates.
  bool is_hot(const param_value& value, std::int64_t now_ms) const noexcept;

  struct impl;

 private:
  explicit resource_param_rules(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace floodgate
