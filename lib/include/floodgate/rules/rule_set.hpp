// The complete set of rules that is loaded, validated and published as one unit.
#pragma once

#include <floodgate/rules/authority_rule.hpp>
#include <floodgate/rules/cluster_config.hpp>
#include <floodgate/rules/degrade_rule.hpp>
#include <floodgate/rules/flow_rule.hpp>
#include <floodgate/rules/hot_keys_rule.hpp>
#include <floodgate/rules/param_flow_rule.hpp>
#include <floodgate/rules/rule_error.hpp>
#include <floodgate/rules/system_rule.hpp>

#include <optional>
#include <string>
#include <vector>

namespace floodgate {

/** Which rate-limit fields HTTP responses carry (the rule file's `rateLimitHeaders`; the Beast
    middleware reads it, floodgate/beast/rate_limit_headers.hpp writes them). */
enum class rate_limit_header_style : unsigned char {
  off,      ///< none (the default)
  draft03,  ///< `x-ratelimit-limit: 100, 100;w=1`, `x-ratelimit-remaining`, `x-ratelimit-reset`
  ietf,     ///< `RateLimit-Policy: "default";q=100;w=1`, `RateLimit: "default";r=37;t=1`
};

/** Every rule of every type, in file order. Applied atomically: no request sees part of one set
    and part of another. */
struct rule_set {
  std::vector<flow_rule> flow;
  std::vector<degrade_rule> degrade;
  std::vector<authority_rule> authority;
  std::vector<system_rule> system;
  std::vector<param_flow_rule> param_flow;
  std::vector<hot_keys_rule> hot_keys;
  /// Where clusterMode flow rules share their windows; absent: no clusterMode rule is allowed.
  std::optional<cluster_config> cluster;
  /// The rate-limit fields HTTP responses carry, unless the middleware's options fix them;
  /// absent: none.
  std::optional<rate_limit_header_style> rate_limit_headers;

  friend bool operator==(const rule_set&, const rule_set&) = default;
};

/// Checks every rule of `rules` (each type validates itself), appending every problem found to `errors`.
void validate(const rule_set& rules, std::vector<rule_error>& errors);

}  // namespace floodgate
