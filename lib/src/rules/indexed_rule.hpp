#pragma once

#include <cstdint>
#include <string_view>

namespace floodgate {

/// A rule and its position in its section of the rule set (`flow[2]` → 2), for labels and blocks.
template <class Rule>
struct indexed_rule {
  Rule rule;
  std::int32_t index = 0;
  friend bool operator==(const indexed_rule&, const indexed_rule&) = default;
};

/// Whether two rules of one section go by the same label in metrics and the admin API: their
/// name, else their place in the file. A changed rule's state carries counters by it.
inline bool same_label(std::string_view name_a, std::int32_t index_a, std::string_view name_b,
                       std::int32_t index_b) noexcept {
  return name_a.empty() ? name_b.empty() && index_a == index_b : name_a == name_b;
}

}  // namespace floodgate
