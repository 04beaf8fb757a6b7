// The complete set of rules that is loaded, validated and published as one unit.
#pragma once

#include <floodgate/authority/authority_rule.hpp>
#include <floodgate/degrade/degrade_rule.hpp>
#include <floodgate/flow/flow_rule.hpp>
#include <floodgate/param/param_flow_rule.hpp>
#include <floodgate/system/system_rule.hpp>

#include <string>
#include <vector>

namespace floodgate {

/** Every rule of every type, in file order. Applied atomically: no request sees part of one set
    and part of another. */
struct rule_set {
  std::vector<flow_rule> flow;
  std::vector<degrade_rule> degrade;
  std::vector<authority_rule> authority;
  std::vector<system_rule> system;
  std::vector<param_flow_rule> param_flow;

  friend bool operator==(const rule_set&, const rule_set&) = default;
};

/** One problem found in a rule: `path` names the field as in the file (`flow[1].count`),
    `message` says what is wrong (`must be >= 0`). The rule-file loader adds file, line and column. */
struct rule_error {
  std::string path;
  std::string message;
  friend bool operator==(const rule_error&, const rule_error&) = default;
};

/// Checks every rule of `rules` as Sentinel does, appending every problem found to `errors`.
void validate(const rule_set& rules, std::vector<rule_error>& errors);

}  // namespace floodgate
