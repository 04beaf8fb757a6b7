#include "rules/param_choice.hpp"

namespace floodgate::rules_detail {

void validate_param_choice(const std::optional<param_selector>& param,
                           const std::optional<std::int32_t>& param_idx, const std::string& path,
                           std::vector<rule_error>& errors) {
  if (param && param_idx) {
    errors.push_back({path + ".paramIdx", "param and paramIdx are mutually exclusive"});
  } else if (!param && !param_idx) {
    errors.push_back({path, "one of param or paramIdx is required"});
  }
  if (param && param->from != param_source::header && param->from != param_source::query &&
      param->from != param_source::path && param->from != param_source::client_ip &&
      param->from != param_source::origin) {
    errors.push_back({path + ".param.from", "must be header, query, path, client_ip or origin"});
  } else if (param) {
    const bool named = param->from == param_source::header ||
                       param->from == param_source::query || param->from == param_source::path;
    if (named && param->name.empty()) {
      errors.push_back({path + ".param.name", "is required when from is header, query or path"});
    } else if (!named && !param->name.empty()) {
      errors.push_back({path + ".param.name", "must be empty when from is client_ip or origin"});
    }
  }
}

}  // namespace floodgate::rules_detail
