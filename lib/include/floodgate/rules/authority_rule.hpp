// Authority rules: white or black lists of origins per resource (SPEC §3).
#pragma once

#include <floodgate/rules/rule_error.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace floodgate {

enum class authority_strategy : std::uint8_t { white = 0, black = 1 };

/// One authority rule; `limit_app` is a comma-separated origin list.
struct authority_rule {
  std::string name;
  std::string resource;
  authority_strategy strategy = authority_strategy::white;
  std::string limit_app;

  friend bool operator==(const authority_rule&, const authority_rule&) = default;
};

/** Checks `rule` as Sentinel's rule manager does, appending every problem found to `errors`
    with paths prefixed by `path` (`authority[3]`). */
void validate(const authority_rule& rule, std::string_view path, std::vector<rule_error>& errors);

}  // namespace floodgate
