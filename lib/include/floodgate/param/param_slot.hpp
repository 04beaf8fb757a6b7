// The param-flow slot: hot-parameter limits per distinct argument value.
#pragma once

#include <floodgate/core/slot.hpp>
#include <floodgate/param/param_flow_rule.hpp>
#include <floodgate/rules/indexed_rule.hpp>
#include <floodgate/rules/rule_set.hpp>

#include <memory>
#include <string_view>
#include <vector>

namespace floodgate {

void validate(const param_flow_rule& rule, std::string_view path, std::vector<rule_error>& errors);

/** The param-flow rules of one resource with their bounded per-value state. State of rules equal
    to one in `previous` carries over. */
class resource_param_rules {
 public:
  static std::unique_ptr<resource_param_rules> build(
      std::vector<indexed_rule<param_flow_rule>> rules, const resource_param_rules* previous);
  ~resource_param_rules();

  slot_verdict check(const check_context& ctx, entry_tokens& tokens) const noexcept;
  void on_blocked_later(const check_context& ctx, entry_tokens& tokens) const noexcept;
  void on_exit(const exit_context& ctx, entry_tokens& tokens) const noexcept;

  struct impl;

 private:
  explicit resource_param_rules(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace floodgate
