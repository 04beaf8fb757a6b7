// The flow slot: a resource's compiled flow rules and their controllers.
#pragma once

#include <floodgate/core/slot.hpp>
#include <floodgate/flow/flow_rule.hpp>
#include <floodgate/rules/indexed_rule.hpp>
#include <floodgate/rules/rule_set.hpp>

#include <memory>
#include <string_view>
#include <vector>

namespace floodgate {

/// Appends every problem of `rule` to `errors`, paths prefixed with `path` (`flow[3]`).
void validate(const flow_rule& rule, std::string_view path, std::vector<rule_error>& errors);

/** The flow rules of one resource, compiled with their traffic-shaping controllers.

    Immutable once built, except for the controllers' own atomic state. Built by the control
    plane; `previous` is the same resource's object in the snapshot being replaced, whose
    controller state carries over for rules that did not change.
*/
class resource_flow_rules {
 public:
  static std::unique_ptr<resource_flow_rules> build(std::vector<indexed_rule<flow_rule>> rules,
                                                    const resource_flow_rules* previous);
  ~resource_flow_rules();

  /// Checks every rule (specific limitApp first); blocks on the first that fails.
  slot_verdict check(const check_context& ctx, entry_tokens& tokens) const noexcept;
  /// A later slot blocked the entry: give back what check() took.
  void on_blocked_later(const check_context& ctx, entry_tokens& tokens) const noexcept;
  void on_exit(const exit_context& ctx, entry_tokens& tokens) const noexcept;

  struct impl;

 private:
  explicit resource_flow_rules(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace floodgate
