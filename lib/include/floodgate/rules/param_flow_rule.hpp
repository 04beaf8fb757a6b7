// Hot-parameter flow rules: a limit per distinct argument value (SPEC §3).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <vector>

#include <floodgate/chain/param_value.hpp>
#include <floodgate/rules/flow_rule.hpp>
#include <floodgate/rules/rule_error.hpp>

namespace floodgate {

/** The largest count a paramFlow rule gives one value, `burstCount` included (2^26 - 1: a value's
    tokens share one atomic word with the time of its last refill). */
inline constexpr double max_param_count = 67'108'863;

/// A per-value exception: `value` gets its own `count`.
struct param_flow_item {
  std::string value;
  double count = 0;
  friend bool operator==(const param_flow_item&, const param_flow_item&) = default;
};

/** One hot-parameter rule. Exactly one of `param` (HTTP) and `param_idx` (library argument list;
    negative counts from the end) is set. */
struct param_flow_rule {
  std::string name;
  std::string resource;
  std::optional<param_selector> param;
  std::optional<std::int32_t> param_idx;
  flow_grade grade = flow_grade::qps;
  double count = 0;                  ///< per value per duration_in_sec
  std::int32_t burst_count = 0;
  std::int32_t duration_in_sec = 1;
  control_behavior behavior = control_behavior::reject;  ///< reject | throttling
  std::int32_t max_queueing_time_ms = 0;
  std::vector<param_flow_item> items;

  friend bool operator==(const param_flow_rule&, const param_flow_rule&) = default;
};

/** Checks `rule` as Sentinel's rule manager does, appending every problem found to `errors`
    with paths prefixed by `path` (`paramFlow[3]`). */
void validate(const param_flow_rule& rule, std::string_view path, std::vector<rule_error>& errors);

}  // namespace floodgate
