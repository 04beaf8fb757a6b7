#include <floodgate/rules/rule_set.hpp>

#include <map>
#include <string_view>
#include <string>
#include <utility>
#include <vector>

namespace floodgate {

namespace {
template <class Rule>
void validate_section(const std::vector<Rule>& rules, std::string_view section,
                      std::vector<rule_error>& errors) {
  for (std::size_t i = 0; i < rules.size(); ++i) {
    validate(rules[i], std::string(section) + "[" + std::to_string(i) + "]", errors);
  }
}

/// A rule as its `rule` label sees it: its name, else its place in the file.
struct labelled_rule {
  std::string_view resource;
  std::string_view section;
  std::size_t index = 0;
  std::string_view name;

  std::string place() const { return std::string(section) + "[" + std::to_string(index) + "]"; }
  std::string label() const { return name.empty() ? place() : std::string(name); }
};

template <class Rule>
void add_labels(const std::vector<Rule>& rules, std::string_view section,
                std::vector<labelled_rule>& out) {
  for (std::size_t i = 0; i < rules.size(); ++i) {
    out.push_back({rules[i].resource, section, i, rules[i].name});
  }
}

/** Two rules of one resource with one label in one metric family would export the same series
    (Prometheus drops duplicates of a scrape, and the admin API could not tell them apart): the
    later name is an error. Only named rules can collide (positions are unique). `rules` are
    those whose series share families: one section, or paramFlow and hotKeys, which both export
    the hot-key families. */
void check_labels_unique(const std::vector<labelled_rule>& rules,
                         std::vector<rule_error>& errors) {
  std::map<std::pair<std::string_view, std::string>, const labelled_rule*> first;
  for (const auto& r : rules) {
    if (r.name.empty()) first.emplace(std::pair{r.resource, r.label()}, &r);  // positions first
  }
  for (const auto& r : rules) {
    if (r.name.empty()) continue;
    const auto [at, fresh] = first.emplace(std::pair{r.resource, r.label()}, &r);
    if (fresh) continue;
    errors.push_back({r.place() + ".name",
                      "\"" + std::string(r.name) + "\" already labels " + at->second->place() +
                          " of resource \"" + std::string(r.resource) +
                          "\" in metrics and the admin API; names must differ"});
  }
}

template <class Rule>
void check_labels_unique(const std::vector<Rule>& rules, std::string_view section,
                         std::vector<rule_error>& errors) {
  std::vector<labelled_rule> labelled;
  add_labels(rules, section, labelled);
  check_labels_unique(labelled, errors);
}

/// Authority: Sentinel keeps only the first rule of a resource; here a second one is an error.
void check_one_authority_rule_per_resource(const std::vector<authority_rule>& rules,
                                           std::vector<rule_error>& errors) {
  std::map<std::string_view, std::size_t> first_of;  // resource → first rule index
  for (std::size_t i = 0; i < rules.size(); ++i) {
    if (rules[i].resource.empty()) continue;
    const auto [first, inserted] = first_of.emplace(rules[i].resource, i);
    if (inserted) continue;
    errors.push_back({"authority[" + std::to_string(i) + "].resource",
                      "a resource has at most one authority rule (first at authority[" +
                          std::to_string(first->second) + "])"});
  }
}

}  // namespace

void validate(const rule_set& rules, std::vector<rule_error>& errors) {
  if (rules.rate_limit_headers && *rules.rate_limit_headers != rate_limit_header_style::off &&
      *rules.rate_limit_headers != rate_limit_header_style::draft03 &&
      *rules.rate_limit_headers != rate_limit_header_style::ietf) {
    errors.push_back({"rateLimitHeaders", "must be off, draft03 or ietf"});
  }
  validate_section(rules.flow, "flow", errors);
  validate_section(rules.degrade, "degrade", errors);
  validate_section(rules.authority, "authority", errors);
  validate_section(rules.system, "system", errors);
  validate_section(rules.param_flow, "paramFlow", errors);
  validate_section(rules.hot_keys, "hotKeys", errors);
  check_labels_unique(rules.flow, "flow", errors);
  check_labels_unique(rules.degrade, "degrade", errors);
  check_one_authority_rule_per_resource(rules.authority, errors);
  std::vector<labelled_rule> hot_key_families;  // a tracked paramFlow rule exports them too
  add_labels(rules.param_flow, "paramFlow", hot_key_families);
  add_labels(rules.hot_keys, "hotKeys", hot_key_families);
  check_labels_unique(hot_key_families, errors);
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
