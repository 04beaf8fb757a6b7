// A problem found in a rule, named by its path in the rule set.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace floodgate {

/** One problem found in a rule: `path` names the field as in the file (`flow[1].count`),
    `message` says what is wrong (`must be >= 0`). The rule-file loader adds file, line and column. */
struct rule_error {
  std::string path;
  std::string message;
  friend bool operator==(const rule_error&, const rule_error&) = default;
};

}  // namespace floodgate
