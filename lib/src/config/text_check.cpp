#include "config/text_check.hpp"

#include <cstdio>

namespace floodgate::config::detail {

std::size_t utf8_sequence_length(std::string_view s, std::size_t i) noexcept {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF)
    n = 2;
  else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return n;
}

std::optional<text_problem> check_text(std::string_view text) {
  int line = 1;
  int column = 1;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const bool control = (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F;
    if (control) {
      char code[8];
      std::snprintf(code, sizeof code, "%02X", c);
      return text_problem{{line, column},
                          std::string("not a text file: control character 0x") + code};
    }
    const std::size_t n = utf8_sequence_length(text, i);
    if (n == 0) return text_problem{{line, column}, "not a text file: invalid UTF-8"};
    // Columns count bytes, as yaml-cpp's do.
    if (c == '\n') {
      ++line;
      column = 1;
    } else {
      column += static_cast<int>(n);
    }
    i += n;
  }
  return std::nullopt;
}

bool valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence_length(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

bool blank_or_comments(std::string_view text) {
  bool in_comment = false;
  for (const char c : text) {
    if (c == '\n') {
      in_comment = false;
    } else if (in_comment || c == ' ' || c == '\t' || c == '\r') {
      continue;
    } else if (c == '#') {
      in_comment = true;
    } else {
      return false;
    }
  }
  return true;
}

void append_printable(std::string& out, std::string_view text, bool quotes) {
  constexpr char hex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const auto u = static_cast<unsigned char>(c);
    const auto next = [&](std::size_t k) {
      return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u;
    };
    if (quotes && (c == '"' || c == '\\')) {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 0xf];
    } else if (u == 0xc2 && next(1) >= 0x80 && next(1) <= 0x9f) {  // U+0080..U+009F
      out += "\\u00";
      out += hex[next(1) >> 4];
      out += hex[next(1) & 0xf];
      i += 1;
    } else if (u == 0xe2 && next(1) == 0x80 && (next(2) == 0xa8 || next(2) == 0xa9)) {
      out += next(2) == 0xa8 ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
}

}  // namespace floodgate::config::detail
