#include <floodgate/config/rule_file.hpp>

#include "config/text_check.hpp"

#include <string>
#include <string_view>

namespace floodgate::config {

namespace {

/// `text` with control characters escaped: one error is one line, whatever the file held.
std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  detail::append_printable(out, text, false);
  return out;
}

}  // namespace

std::string rule_file_error::to_string() const {
  // Every error has the SPEC's four parts; one about the file as a whole has `(file)` as path.
  return printable(file) + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " +
         printable(path.empty() ? std::string(file_level_path) : path) + ": " +
         printable(message);
}

std::string parse_result::error_text() const {
  std::string out;
  for (const auto& e : errors) {
    out += e.to_string();
    out += '\n';
  }
  return out;
}

}  // namespace floodgate::config
