// Reading a rule file's bytes safely: size cap, no hang on FIFOs, clear messages.
#pragma once

#include <string>

namespace floodgate::config::detail {

/// A whole file's text, or why it could not be read.
struct file_text {
  std::string text;
  std::string error;  ///< empty when the text was read
  bool ok() const noexcept { return error.empty(); }
};

/// Reads `path` whole, up to max_rule_file_bytes. Directories, FIFOs, devices, missing and
/// oversized files are errors with a message (no file name; the caller adds it).
file_text read_file_text(const std::string& path);

}  // namespace floodgate::config::detail
