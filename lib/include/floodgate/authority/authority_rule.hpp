// Authority rules: white or black lists of origins per resource (SPEC §3).
#pragma once

#include <cstdint>
#include <string>

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

}  // namespace floodgate
