// Authority rule validation: a resource and at least one origin.
#include <floodgate/rules/authority_rule.hpp>

#include <string>

namespace floodgate {

namespace {

bool is_blank(std::string_view s) noexcept {
  return s.find_first_not_of(" \t") == std::string_view::npos;
}

/// Whether a comma-separated origin list names at least one origin.
bool names_an_origin(std::string_view list) noexcept {
  while (true) {
    const auto comma = list.find(',');
    if (!is_blank(list.substr(0, comma))) return true;
    if (comma == std::string_view::npos) return false;
    list.remove_prefix(comma + 1);
  }
}

}  // namespace

void validate(const authority_rule& rule, std::string_view path, std::vector<rule_error>& errors) {
  const std::string p(path);
  if (rule.resource.empty()) {
    errors.push_back({p + ".resource", "must not be empty"});
  }
  if (is_blank(rule.limit_app)) {
    errors.push_back({p + ".limitApp", "must not be empty"});
  } else if (!names_an_origin(rule.limit_app)) {
    errors.push_back({p + ".limitApp", "must name at least one origin"});
  }
  if (rule.strategy != authority_strategy::white && rule.strategy != authority_strategy::black) {
    errors.push_back({p + ".strategy", "must be white or black"});
  }
}

}  // namespace floodgate
