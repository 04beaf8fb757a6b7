// The complete set of rules that is loaded, validated and published as one unit.
#pragma once

#include <floodgate/rules/authority_rule.hpp>
#include <floodgate/rules/cluster_config.hpp>
#include <floodgate/rules/degrade_rule.hpp>
#include <floodgate/rules/flow_rule.hpp>
#include <floodgate/rules/param_flow_rule.hpp>
#include <floodgate/rules/rule_error.hpp>
#include <floodgate/rules/system_rule.hpp>

#include <optional>
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
  /// Where clusterMode flow rules share their windows; absent: no clusterMode rule is allowed.
  std::optional<cluster_config> cluster;

  friend bool operator==(const rule_set&, const rule_set&) = default;
};

/// Checks every rule of `rules` (each type validates itself), appending every problem found to `errors`.
void validate(const rule_set& rules, std::vector<rule_error>& errors);

}  // namespace floodgate
