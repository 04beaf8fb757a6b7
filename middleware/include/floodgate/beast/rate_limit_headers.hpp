// Response fields that tell clients their limit: Envoy's x-ratelimit-* (RateLimit header fields
// draft 03) or the IETF httpapi draft's structured RateLimit-Policy / RateLimit fields.
#pragma once

#include <floodgate/engine/engine.hpp>
#include <floodgate/rules/rule_set.hpp>

#include <boost/beast/core/string.hpp>

#include <charconv>
#include <cstdint>
#include <string_view>

namespace floodgate::beast {

/// Which rate-limit fields responses carry (guard_options::rate_limit_headers, or the rule
/// file's `rateLimitHeaders`).
using floodgate::rate_limit_header_style;

/// Parses `off`, `draft03` or `ietf` in any case (as the rule file reads enum names); false for
/// anything else.
inline bool parse_rate_limit_header_style(std::string_view s, rate_limit_header_style& out) {
  if (boost::beast::iequals(s, "off")) {
    out = rate_limit_header_style::off;
  } else if (boost::beast::iequals(s, "draft03")) {
    out = rate_limit_header_style::draft03;
  } else if (boost::beast::iequals(s, "ietf")) {
    out = rate_limit_header_style::ietf;
  } else {
    return false;
  }
  return true;
}

/// Whole seconds until `q` resets, rounded up (a client waiting that long finds its quota).
constexpr std::int64_t reset_seconds(const quota_status& q) noexcept {
  return (q.reset.count() + 999) / 1000;
}

/** Sets the fields of `style` describing `q` (engine::quota) on a response's `fields`; nothing
    for `off` or an empty `q`. The window is one second: flow rule counts are per second. */
template <class Fields>
void set_rate_limit_headers(Fields& fields, rate_limit_header_style style, const quota_status& q) {
  if (style == rate_limit_header_style::off || !q) {
    return;
  }
  char buf[96];
  char* const end = buf + sizeof buf;
  const auto put = [&](char* at, std::string_view text) {
    for (const char c : text) *at++ = c;
    return at;
  };
  const auto num = [&](char* at, std::uint64_t v) { return std::to_chars(at, end, v).ptr; };
  const auto value = [&](const char* last) {
    return std::string_view(buf, static_cast<std::size_t>(last - buf));
  };
  const auto reset = static_cast<std::uint64_t>(reset_seconds(q));
  if (style == rate_limit_header_style::draft03) {
    fields.set("x-ratelimit-limit", value(put(num(put(num(buf, q.limit), ", "), q.limit), ";w=1")));
    fields.set("x-ratelimit-remaining", value(num(buf, q.remaining)));
    fields.set("x-ratelimit-reset", value(num(buf, reset)));
    return;
  }
  fields.set("RateLimit-Policy", value(put(num(put(buf, "\"default\";q="), q.limit), ";w=1")));
  fields.set("RateLimit",
             value(num(put(num(put(buf, "\"default\";r="), q.remaining), ";t="), reset)));
}

}  // namespace floodgate::beast
