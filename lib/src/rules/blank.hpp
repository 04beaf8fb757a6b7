// Whether a name or list is blank, as Sentinel's StringUtil.isBlank reads it.
#pragma once

#include <algorithm>
#include <cctype>
#include <string_view>

namespace floodgate::rules_detail {

/// Empty or only white space.
inline bool is_blank(std::string_view s) noexcept {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c) != 0; });
}

}  // namespace floodgate::rules_detail
