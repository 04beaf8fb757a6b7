#include <floodgate/config/rule_file.hpp>

namespace floodgate::config {

std::string rule_file_error::to_string() const {
  std::string out = file;
  // File-level errors (unreadable, too large) have no position.
  if (line > 0) out += ":" + std::to_string(line) + ":" + std::to_string(column);
  out += ": ";
  if (!path.empty()) out += path + ": ";
  return out + message;
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
