#include "admin_json.hpp"

#include <cmath>
#include <string_view>

namespace floodgate::beast {

namespace json = boost::json;

namespace {

/// The watcher ends each problem with a newline; the JSON keeps the newlines between them only.
std::string_view without_trailing_space(std::string_view s) {
  const std::size_t last = s.find_last_not_of(" \t\r\n");
  return s.substr(0, last == std::string_view::npos ? 0 : last + 1);
}

}  // namespace

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
