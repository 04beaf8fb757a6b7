// Valid UTF-8 out of caller-supplied bytes, for the JSON and text the middleware serves.
#pragma once

#include "config/utf8_sequence.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace floodgate::beast::detail {

/// U+FFFD, what an ill-formed byte becomes.
inline constexpr std::string_view replacement_character = "\xEF\xBF\xBD";

/// RFC 3629's sequences, as the rule files are checked.
using config::detail::utf8_sequence_length;

/// Appends `s` with every byte that starts no well-formed sequence replaced by U+FFFD.
void append_valid_utf8(std::string& out, std::string_view s);

/// `s` made valid UTF-8 as append_valid_utf8 does; returned as it is when it already is.
std::string valid_utf8(std::string s);

}  // namespace floodgate::beast::detail
