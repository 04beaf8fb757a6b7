#include "utf8.hpp"

namespace floodgate::beast::detail {

namespace {

bool continuation(unsigned char c) noexcept { return (c & 0xC0) == 0x80; }

}  // namespace

std::size_t utf8_sequence_length(std::string_view s, std::size_t i) noexcept {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char lead = at(0);
  if (lead < 0x80) return 1;
  // The lead byte fixes the length and the range of the second byte (RFC 3629, section 4).
  std::size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // overlong below U+0800
    if (lead == 0xED) high = 0x9F;  // the surrogates U+D800..U+DFFF
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // overlong below U+10000
    if (lead == 0xF4) high = 0x8F;  // above U+10FFFF
  } else {
    return 0;  // a continuation byte, C0/C1 (overlong ASCII) or F5..FF
  }
  if (s.size() - i < length || at(1) < low || at(1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if (!continuation(at(k))) return 0;
  }
  return length;
}

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
