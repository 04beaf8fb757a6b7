// Well-formed UTF-8 sequences (RFC 3629), for rule files and for what the middleware serves.
#pragma once

#include <cstddef>
#include <string_view>

namespace floodgate::config::detail {

/** The length of the well-formed UTF-8 sequence that starts at `s[i]` (1 for ASCII), or 0 if
    none does: RFC 3629's table, so no overlong forms, no surrogates, nothing above U+10FFFF. */
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) noexcept;

}  // namespace floodgate::config::detail
