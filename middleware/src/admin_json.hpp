// JSON pieces shared by the admin API and the dashboard snapshot.
#pragma once

#include <floodgate/config/rule_file_watcher.hpp>
#include <floodgate/degrade/circuit_breaker.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace floodgate::beast {

/// Whole numbers print as integers (`12`, not `1.2E1`); non-finite values as null.
boost::json::value json_number(double d);

/// `{file, time, ok, error, successes, failures}`; `error` null when ok, else one line a problem.
boost::json::object reload_json(const config::reload_status& st);

/// The breaker's rule name, else `degrade[<index>]` as in the file.
std::string breaker_rule_label(const circuit_breaker& b, std::int32_t index);

/// `{resource, rule, state}` of a breaker in `state` (read once by the caller, who may add
/// fields that depend on it): what both the admin API and the dashboard list.
boost::json::object breaker_json(std::string_view resource, const circuit_breaker& b,
                                 std::int32_t index, breaker_state state);

}  // namespace floodgate::beast
