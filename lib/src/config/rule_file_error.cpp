#include <floodgate/config/rule_file.hpp>

namespace floodgate::config {

std::string rule_file_error::to_string() const {
  // Every error has the SPEC's four parts; one about the file as a whole has `(file)` as path.
  return file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " +
         (path.empty() ? std::string(file_level_path) : path) + ": " + message;
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
