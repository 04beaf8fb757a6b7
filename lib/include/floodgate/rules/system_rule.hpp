// System rules: whole-process adaptive protection of inbound traffic (SPEC §3).
#pragma once

#include <floodgate/rules/rule_error.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace floodgate {

/// One system rule; every threshold is off when negative. Several rules merge with min().
struct system_rule {
  std::string name;
  double highest_system_load = -1;  ///< 1-minute load average (needs the BBR check to block)
  double highest_cpu_usage = -1;    ///< 0..1
  double avg_rt = -1;               ///< ms
  double max_thread = -1;           ///< in-flight inbound requests
  double qps = -1;

  friend bool operator==(const system_rule&, const system_rule&) = default;
};

/** Checks `rule` as Sentinel's rule manager does, appending every problem found to `errors`
    with paths prefixed by `path` (`system[3]`). */
void validate(const system_rule& rule, std::string_view path, std::vector<rule_error>& errors);

}  // namespace floodgate
