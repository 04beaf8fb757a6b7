// The parameter a rule reads (`param` or `paramIdx`), checked alike for paramFlow and hotKeys.
#pragma once

#include <floodgate/chain/param_value.hpp>
#include <floodgate/rules/rule_error.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace floodgate::rules_detail {

/// Exactly one of `param` and `param_idx`; a header or query needs a name, the others none.
void validate_param_choice(const std::optional<param_selector>& param,
                           const std::optional<std::int32_t>& param_idx, const std::string& path,
                           std::vector<rule_error>& errors);

}  // namespace floodgate::rules_detail
