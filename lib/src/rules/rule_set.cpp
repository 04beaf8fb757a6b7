#include <floodgate/rules/rule_set.hpp>

#include <map>
#include <string>
#include <utility>

namespace floodgate {

namespace {
template <class Rule>
void validate_section(const std::vector<Rule>& rules, std::string_view section,
                      std::vector<rule_error>& errors) {
  for (std::size_t i = 0; i < rules.size(); ++i) {
    validate(rules[i], std::string(section) + "[" + std::to_string(i) + "]", errors);
  }
}

/** A rule's `rule` label in metrics and the admin API: its name, else its place in the file.
    Two rules of one resource with one label would export the same series (Prometheus drops
    duplicates of a scrape, and the admin API could not tell them apart): the later one's name
    is an error. Only named rules can collide (positions are unique). */
template <class Rule>
void check_labels_unique(const std::vector<Rule>& rules, std::string_view section,
                         std::vector<rule_error>& errors) {
  const auto label_of = [&](std::size_t i) {
    return rules[i].name.empty() ? std::string(section) + "[" + std::to_string(i) + "]"
                                 : rules[i].name;
  };
  std::map<std::pair<std::string_view, std::string>, std::size_t> first;
  for (std::size_t i = 0; i < rules.size(); ++i) {
    if (!rules[i].name.empty()) continue;  // positions first: a name that spells one collides
    first.emplace(std::pair{std::string_view{rules[i].resource}, label_of(i)}, i);
  }
  for (std::size_t i = 0; i < rules.size(); ++i) {
    if (rules[i].name.empty()) continue;
    const auto [at, fresh] =
        first.emplace(std::pair{std::string_view{rules[i].resource}, label_of(i)}, i);
    if (fresh) continue;
    const std::string other = std::string(section) + "[" + std::to_string(at->second) + "]";
    errors.push_back({std::string(section) + "[" + std::to_string(i) + "].name",
                      "\"" + rules[i].name + "\" already labels " + other + " of resource \"" +
                          rules[i].resource +
                          "\" in metrics and the admin API; names must differ"});
  }
}

}  // namespace

void validate(const rule_set& rules, std::vector<rule_error>& errors) {
  validate_section(rules.flow, "flow", errors);
  validate_section(rules.degrade, "degrade", errors);
  validate_section(rules.authority, "authority", errors);
  validate_section(rules.system, "system", errors);
  validate_section(rules.param_flow, "paramFlow", errors);
  validate_section(rules.hot_keys, "hotKeys", errors);
  check_labels_unique(rules.flow, "flow", errors);
  check_labels_unique(rules.degrade, "degrade", errors);
  check_labels_unique(rules.param_flow, "paramFlow", errors);
  check_labels_unique(rules.hot_keys, "hotKeys", errors);
  if (rules.cluster) {
    validate(*rules.cluster, errors);
    return;
  }
  for (std::size_t i = 0; i < rules.flow.size(); ++i) {
    if (rules.flow[i].cluster_mode) {
      errors.push_back({"flow[" + std::to_string(i) + "].clusterMode",
                        "needs a cluster: section (the Redis that holds the shared windows)"});
    }
  }
}

}  // namespace floodgate
