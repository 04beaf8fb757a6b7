// Hot-key rule validation, field by field.
#include <floodgate/rules/hot_keys_rule.hpp>

#include "rules/param_choice.hpp"

#include <cmath>
#include <string>

namespace floodgate {

void validate(const hot_keys_rule& rule, std::string_view path, std::vector<rule_error>& errors) {
  const std::string p(path);
  if (rule.resource.empty()) {
    errors.push_back({p + ".resource", "must not be empty"});
  }
  rules_detail::validate_param_choice(rule.param, rule.param_idx, p, errors);
  if (rule.window_sec <= 0 || rule.window_sec > max_hot_keys_window_sec) {
    errors.push_back({p + ".windowSec", "must be between 1 and " +
                                            std::to_string(max_hot_keys_window_sec)});
  }
  if (rule.top <= 0 || rule.top > max_hot_keys_top) {
    errors.push_back({p + ".top", "must be between 1 and " + std::to_string(max_hot_keys_top)});
  }
  if (!(rule.threshold >= 0) || !std::isfinite(rule.threshold)) {
    errors.push_back({p + ".threshold", "must be a finite number >= 0"});
  }
}

}  // namespace floodgate
