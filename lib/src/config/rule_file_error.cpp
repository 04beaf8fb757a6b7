#include <floodgate/config/rule_file.hpp>

namespace floodgate::config {

std::string rule_file_error::to_string() const {
  std::string out = file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
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
