#include <floodgate/beast/blocked_response.hpp>
#include "utf8.hpp"

#include <boost/beast/http/field.hpp>

#include <string>

namespace floodgate::beast {

http::status blocked_status(block_reason reason) noexcept {
  switch (reason) {
    case block_reason::degrade:
    case block_reason::system:
      return http::status::service_unavailable;
    case block_reason::authority:
      return http::status::forbidden;
    case block_reason::flow:
    case block_reason::param_flow:
    case block_reason::custom:
      break;
  }
  return http::status::too_many_requests;
}

long retry_after_seconds(const block_info& block) noexcept {
  switch (block.reason) {
    case block_reason::authority:
      return 0;  // retrying will not help
    case block_reason::system:
      return 1;
    default:
      break;
  }
  const auto ms = block.retry_after.count();
  const long seconds = static_cast<long>((ms + 999) / 1000);
  return seconds >= 1 ? seconds : 1;
}

void append_json_escaped(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += "\\u00";
          out += hex[(c >> 4) & 0xF];
          out += hex[c & 0xF];
        } else if (const std::size_t n = detail::utf8_sequence_length(s, i); n == 0) {
          out += detail::replacement_character;  // JSON text is UTF-8 (RFC 8259, section 8.1)
        } else {
          out.append(s.substr(i, n));
          i += n - 1;
        }
    }
  }
}

http::response<http::string_body> make_blocked_response(const block_info& block,
                                                        std::string_view resource,
                                                        unsigned version, bool keep_alive) {
  const std::string_view reason = to_string(block.reason);
  http::response<http::string_body> res{blocked_status(block.reason), version};
  res.set(http::field::content_type, "application/json");
  res.set(blocked_header, reason);
  if (const long s = retry_after_seconds(block); s > 0) {
    res.set(http::field::retry_after, std::to_string(s));
  }
  std::string& body = res.body();
  body.reserve(32 + reason.size() + resource.size());
  body += R"({"blocked":")";
  body += reason;
  body += R"(","resource":")";
  append_json_escaped(body, resource);
  body += "\"}";
  res.keep_alive(keep_alive);
  res.prepare_payload();
  return res;
}

void drop_body(http::response<http::string_body>& res) {
  res.content_length(res.body().size());
  res.body().clear();
}

void drop_body_and_length(http::response<http::string_body>& res) {
  res.body().clear();
  res.erase(http::field::content_length);
}

http::response<http::string_body> make_error_response(http::status status,
                                                      std::string_view message, unsigned version,
                                                      bool keep_alive) {
  http::response<http::string_body> res{status, version};
  res.set(http::field::content_type, "application/json");
  std::string& body = res.body();
  body += R"({"error":")";
  append_json_escaped(body, message);
  body += "\"}";
  res.keep_alive(keep_alive);
  res.prepare_payload();
  return res;
}

}  // namespace floodgate::beast
