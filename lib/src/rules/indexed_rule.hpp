#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

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

/// How a reload's rules of one resource follow the previous ones (succeed_rules()).
struct rule_succession {
  /// The previous rule whose state rule k keeps: an equal one, each kept at most once.
  std::vector<std::optional<std::size_t>> kept;
  /// For a rule that keeps none: the previous one under its label that no rule kept, whose
  /// counters its new state carries on from.
  std::vector<std::optional<std::size_t>> predecessor;
};

/** Matches `count` new rules to `before` previous ones. `keeps(k, i)`: new rule k may keep
    previous rule i's state (Sentinel keeps an equal rule's, so two equal rules keep two);
    `succeeds(k, i)`: a new state for rule k carries previous rule i's counters (same_label(),
    and state that has counters on both sides). First come, first served in file order. */
template <class Keeps, class Succeeds>
rule_succession succeed_rules(std::size_t count, std::size_t before, Keeps keeps,
                              Succeeds succeeds) {
  rule_succession s{std::vector<std::optional<std::size_t>>(count),
                    std::vector<std::optional<std::size_t>>(count)};
  std::vector<bool> taken(before);
  for (std::size_t k = 0; k < count; ++k) {
    for (std::size_t i = 0; i < before && !s.kept[k]; ++i) {
      if (!taken[i] && keeps(k, i)) {
        taken[i] = true;
        s.kept[k] = i;
      }
    }
  }
  for (std::size_t k = 0; k < count; ++k) {
    for (std::size_t i = 0; i < before && !s.kept[k] && !s.predecessor[k]; ++i) {
      if (!taken[i] && succeeds(k, i)) s.predecessor[k] = i;
    }
  }
  return s;
}

}  // namespace floodgate
