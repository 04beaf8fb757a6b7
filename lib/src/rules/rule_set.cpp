#include <floodgate/rules/rule_set.hpp>

#include <string>

namespace floodgate {

namespace {
template <class Rule>
void validate_section(const std::vector<Rule>& rules, std::string_view section,
                      std::vector<rule_error>& errors) {
  for (std::size_t i = 0; i < rules.size(); ++i) {
    validate(rules[i], std::string(section) + "[" + std::to_string(i) + "]", errors);
  }
}
}  // namespace

void validate(const rule_set& rules, std::vector<rule_error>& errors) {
  validate_section(rules.flow, "flow", errors);
  validate_section(rules.degrade, "degrade", errors);
  validate_section(rules.authority, "authority", errors);
  validate_section(rules.system, "system", errors);
  validate_section(rules.param_flow, "paramFlow", errors);
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
