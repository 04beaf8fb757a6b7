#include <floodgate/beast/query_string.hpp>

namespace floodgate::beast {

namespace {

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// Calls out(char) for each decoded character of `s`; a malformed escape is kept as is. `+` is
/// a space in a query (form encoding), itself in a path.
template <class Out>
void decode(std::string_view s, Out&& out, bool plus_is_space = true) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+' && plus_is_space) {
      out(' ');
    } else if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 &&
               hex_value(s[i + 2]) >= 0) {
      out(static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2])));
      i += 2;
    } else {
      out(s[i]);
    }
  }
}

bool needs_decoding(std::string_view s) noexcept {
  return s.find_first_of("%+") != std::string_view::npos;
}

bool decoded_equals(std::string_view encoded, std::string_view plain) {
  if (!needs_decoding(encoded)) {
    return encoded == plain;
  }
  std::size_t at = 0;
  bool equal = true;
  decode(encoded, [&](char c) {
    equal = equal && at < plain.size() && plain[at] == c;
    ++at;
  });
  return equal && at == plain.size();
}

}  // namespace

std::optional<std::string_view> find_query_param(std::string_view target, std::string_view name,
                                                 std::string& scratch) {
  const std::size_t q = target.find('?');
  if (q == std::string_view::npos) {
    return std::nullopt;
  }
  std::string_view query = target.substr(q + 1);
  query = query.substr(0, query.find('#'));
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    const std::size_t eq = pair.find('=');
    const std::string_view key = pair.substr(0, eq);
    if (!decoded_equals(key, name)) {
      continue;
    }
    const std::string_view value = eq == std::string_view::npos ? std::string_view{}
                                                                 : pair.substr(eq + 1);
    if (!needs_decoding(value)) {
      return value;
    }
    scratch.clear();
    decode(value, [&](char c) { scratch.push_back(c); });
    return std::string_view{scratch};
  }
  return std::nullopt;
}

std::string_view decode_path_segment(std::string_view segment, std::string& scratch) {
  if (segment.find('%') == std::string_view::npos) {
    return segment;
  }
  scratch.clear();
  decode(
      segment, [&](char c) { scratch.push_back(c); }, /*plus_is_space=*/false);
  return std::string_view{scratch};
}

}  // namespace floodgate::beast
