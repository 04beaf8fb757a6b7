// Checks that rule-file bytes are text before YAML sees them (yaml-cpp accepts binary as a scalar).
#pragma once

#include "config/document_reader.hpp"
#include "config/utf8_sequence.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace floodgate::config::detail {

/// The first reason `text` is not UTF-8 text fit for YAML, and where; nullopt when it is.
struct text_problem {
  location at;
  std::string message;
};
std::optional<text_problem> check_text(std::string_view text);

/// True when `text` is well-formed UTF-8 (escapes in quoted YAML strings can produce bytes that
/// are not, e.g. a lone surrogate `"\uD800"`, and such a string could not be written back).
bool valid_utf8(std::string_view text);

/// True when `text` holds nothing but whitespace and comments.
bool blank_or_comments(std::string_view text);

/// Appends `c` to `out` as a message shows it: a control character escaped (`\n`, `\t`, `\r`,
/// else `\xHH`), so text from the file never starts a line of its own; anything else as is.
void append_printable(std::string& out, char c);

}  // namespace floodgate::config::detail
