// JSON pieces shared by the admin API and the dashboard snapshot.
#pragma once

#include <floodgate/config/rule_file_watcher.hpp>
#include <floodgate/degrade/circuit_breaker.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace floodgate::beast {

/// Whole numbers print as integers (`12`, not `1.2E1`); non-finite values as null.
boost::json::value json_number(double d);

/** `v` as JSON text, as boost::json::serialize writes it except for doubles: those take the
    shortest text that reads back as the same double, in plain notation from a millionth up to
    1e17 (`3.25`, `0.0001`), else whichever is shorter (`1e-09`, `1e+20`); Boost.JSON 1.81
    writes `3.25E0`. Non-finite doubles are null. */
std::string json_text(const boost::json::value& v);

/// `{file, time, ok, error, successes, failures}`; `error` null when ok, else one line a problem.
boost::json::object reload_json(const config::reload_status& st);

/// The breaker's rule name, else `degrade[<index>]` as in the file.
std::string breaker_rule_label(const circuit_breaker& b, std::int32_t index);

/// The state the admin API, the dashboard and the metrics report: always one of the three SPEC
/// §5 and §6 name. A binary breaker's own; an adaptive breaker, which has no state machine, is
/// `open` while its window makes it drop a share of the requests (`window.drop_ratio > 0`), else
/// `closed`.
breaker_state reported_state(breaker_state state,
                             const std::optional<adaptive_window_state>& window) noexcept;

/// `{resource, rule, state}` of a breaker in `state` (read once by the caller, who may add
/// fields that depend on it): what both the admin API and the dashboard list. An adaptive
/// breaker adds `grade: "adaptive"` and its window at `now_ms`: `dropRatio, requests, accepts`.
boost::json::object breaker_json(std::string_view resource, const circuit_breaker& b,
                                 std::int32_t index, breaker_state state, std::int64_t now_ms);

}  // namespace floodgate::beast
