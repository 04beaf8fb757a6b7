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

/** Appends `text` to `out` as a message shows it: control characters escaped — C0 and DEL as
    `\n`, `\t`, `\r` or `\xHH`, the C1 controls (U+0080..U+009F) and the line and paragraph
    separators (U+2028, U+2029) as `\uHHHH` — so text from the file can neither start a line
    of its own nor send a terminal sequence; with `quotes`, `"` and `\` escaped too. */
void append_printable(std::string& out, std::string_view text, bool quotes);

}  // namespace floodgate::config::detail
