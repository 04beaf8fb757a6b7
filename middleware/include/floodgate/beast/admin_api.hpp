// The admin API (SPEC §5): JSON views of statistics, rules, breakers and reloads.
#pragma once

#include <floodgate/engine/engine.hpp>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>

#include <functional>
#include <string>
#include <string_view>

namespace floodgate::config {
class rule_file_watcher;
}

namespace floodgate::beast {

namespace http = boost::beast::http;

class metrics_handler;

/// What the admin API reads besides the engine; each must outlive the admin_api.
struct admin_options {
  /// Feeds `/floodgate/reload`; without it that endpoint answers 404.
  const config::rule_file_watcher* watcher = nullptr;
  /// Serves `/metrics`; without it that endpoint answers 404.
  const metrics_handler* metrics = nullptr;
  /// Feeds `/floodgate/cluster` with a JSON object (e.g. cluster::status_json of the Redis
  /// adapter's status); without it that endpoint answers 404.
  std::function<std::string()> cluster;
};

/** The read-only admin endpoints, as a handler for a Beast server of your own. Mount it on a
    listener bound to loopback: it has no endpoint that changes state, so it needs no token.

    | endpoint | returns |
    |---|---|
    | `GET /floodgate/resources` | array: resource, passQps, blockQps, successQps, exceptionQps, avgRt, minRt, concurrency, totalPass, totalBlock |
    | `GET /floodgate/tree` | the statistics tree from `machine-root`, nested `children` |
    | `GET /floodgate/origins?resource=R` | array: origin and the statistics above, for R |
    | `GET /floodgate/rules` | the rules in force, in the rule file's schema |
    | `GET /floodgate/breakers` | array: resource, rule, state, nextProbeTime (Unix ms or null) |
    | `GET /floodgate/reload` | `{file, time, ok, error}` of the last load attempt |
    | `GET /metrics` | Prometheus text format |

    Anything else is a JSON 404 (405 for other methods on a known path). The reload `error` is
    null after a successful load, else one `FILE:LINE:COLUMN: PATH: message` line per problem.

    @par Thread Safety
    Calls may run concurrently on any threads; they never block requests.
*/
class admin_api {
 public:
  explicit admin_api(const engine& eng, admin_options options = {})
      : engine_(&eng), options_(options) {}

  /// Answers one request; `target` is the request target (origin form, with its query).
  http::response<http::string_body> handle(http::verb method, std::string_view target,
                                           unsigned version, bool keep_alive) const;

  template <class Body, class Fields>
  http::response<http::string_body> operator()(const http::request<Body, Fields>& req) const {
    return handle(req.method(), std::string_view{req.target()}, req.version(), req.keep_alive());
  }

 private:
  const engine* engine_;
  admin_options options_;
};

}  // namespace floodgate::beast
