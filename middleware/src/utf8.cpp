#include "utf8.hpp"

namespace floodgate::beast::detail {

void append_valid_utf8(std::string& out, std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) {
      out += replacement_character;
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
}

std::string valid_utf8(std::string s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) {
      std::string out;
      out.reserve(s.size() + 16);
      out.append(s, 0, i);
      append_valid_utf8(out, std::string_view(s).substr(i));
      return out;
    }
    i += n;
  }
  return s;
}

}  // namespace floodgate::beast::detail
