#pragma once

#include <cstdint>

namespace floodgate {

/// A rule and its position in its section of the rule set (`flow[2]` → 2), for labels and blocks.
template <class Rule>
struct indexed_rule {
  Rule rule;
  std::int32_t index = 0;
  friend bool operator==(const indexed_rule&, const indexed_rule&) = default;
};

}  // namespace floodgate
