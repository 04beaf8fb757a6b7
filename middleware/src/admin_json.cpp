#include "admin_json.hpp"

#include <boost/json/serialize.hpp>

#include <charconv>
#include <cmath>
#include <string_view>
#include <system_error>

namespace floodgate::beast {

namespace json = boost::json;

namespace {

/// The watcher ends each problem with a newline; the JSON keeps the newlines between them only.
std::string_view without_trailing_space(std::string_view s) {
  const std::size_t last = s.find_last_not_of(" \t\r\n");
  return s.substr(0, last == std::string_view::npos ? 0 : last + 1);
}

template <class Number>
void append_number(std::string& out, Number n) {
  // The longest integer fits, and so does the longest shortest double, `-2.2250738585072014e-308`.
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, n);
  out.append(buf, r.ptr);
}

/// Plain notation from a millionth up to 1e17 (at most 25 characters, `-0.0000012345678901234567`),
/// else whatever is shortest (`1e-09`, `1e+20`); either way the shortest text of that form that
/// reads back as `d`.
void append_double(std::string& out, double d) {
  const double a = std::fabs(d);
  if (a == 0 || (a >= 1e-6 && a < 1e17)) {
    char buf[48];
    if (const auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::fixed);
        r.ec == std::errc{}) {
      out.append(buf, r.ptr);
      return;
    }
  }
  append_number(out, d);
}

void append_json(std::string& out, const json::value& v) {
  switch (v.kind()) {
    case json::kind::null:
      out += "null";
      break;
    case json::kind::bool_:
      out += v.get_bool() ? "true" : "false";
      break;
    case json::kind::int64:
      append_number(out, v.get_int64());
      break;
    case json::kind::uint64:
      append_number(out, v.get_uint64());
      break;
    case json::kind::double_:
      if (std::isfinite(v.get_double())) {
        append_double(out, v.get_double());
      } else {
        out += "null";
      }
      break;
    case json::kind::string:
      out += json::serialize(json::string_view{v.get_string()});
      break;
    case json::kind::array: {
      out += '[';
      const char* sep = "";
      for (const json::value& e : v.get_array()) {
        out += sep;
        append_json(out, e);
        sep = ",";
      }
      out += ']';
      break;
    }
    case json::kind::object: {
      out += '{';
      const char* sep = "";
      for (const json::key_value_pair& kv : v.get_object()) {
        out += sep;
        out += json::serialize(kv.key());
        out += ':';
        append_json(out, kv.value());
        sep = ",";
      }
      out += '}';
      break;
    }
  }
}

}  // namespace

std::string json_text(const json::value& v) {
  std::string out;
  append_json(out, v);
  return out;
}

json::value json_number(double d) {
  if (!std::isfinite(d)) {
    return nullptr;
  }
  if (d == std::floor(d) && std::fabs(d) < 9.0e15) {
    return static_cast<std::int64_t>(d);
  }
  return d;
}

json::object reload_json(const config::reload_status& st) {
  json::object o;
  o["file"] = st.file;
  o["time"] = st.time_unix_ms > 0 ? json::value(st.time_unix_ms) : json::value(nullptr);
  o["ok"] = st.ok;
  o["error"] = st.ok ? json::value(nullptr) : json::value(without_trailing_space(st.error));
  o["successes"] = st.successes;
  o["failures"] = st.failures;
  return o;
}

std::string breaker_rule_label(const circuit_breaker& b, std::int32_t index) {
  return b.rule().name.empty() ? "degrade[" + std::to_string(index) + "]" : b.rule().name;
}

breaker_state reported_state(breaker_state state,
                             const std::optional<adaptive_window_state>& window) noexcept {
  if (state != breaker_state::adaptive) {
    return state;
  }
  return window && window->drop_ratio > 0 ? breaker_state::open : breaker_state::closed;
}

boost::json::object breaker_json(std::string_view resource, const circuit_breaker& b,
                                 std::int32_t index, breaker_state state, std::int64_t now_ms) {
  const std::optional<adaptive_window_state> window =
      state == breaker_state::adaptive ? b.adaptive(now_ms) : std::nullopt;
  boost::json::object o;
  o["resource"] = resource;
  o["rule"] = breaker_rule_label(b, index);
  o["state"] = to_string(reported_state(state, window));
  if (window) {
    o["grade"] = "adaptive";
    o["dropRatio"] = json_number(window->drop_ratio);
    o["requests"] = window->requests;
    o["accepts"] = window->accepts;
  }
  return o;
}

}  // namespace floodgate::beast
