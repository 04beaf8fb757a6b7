// Hot-parameter flow rules: a limit per distinct argument value (SPEC §3).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <floodgate/flow/flow_rule.hpp>

namespace floodgate {

/// Where the middleware takes an HTTP request's parameter from.
enum class param_source : std::uint8_t { header, query, client_ip, origin };

struct param_selector {
  param_source from = param_source::header;
  std::string name;  ///< header or query parameter name; empty for client_ip / origin
  friend bool operator==(const param_selector&, const param_selector&) = default;
};

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

}  // namespace floodgate
