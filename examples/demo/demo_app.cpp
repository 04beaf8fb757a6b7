#include "demo_app.hpp"

#include <floodgate/beast/blocked_response.hpp>
#include <floodgate/beast/dashboard_stream.hpp>
#include <floodgate/beast/guard.hpp>
#include <floodgate/beast/query_string.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/field.hpp>

#include <charconv>
#include <memory>
#include <string>

namespace floodgate::demo {

namespace {

using response = http::response<http::string_body>;

/// The nested outbound resource `/work` guards its wait with.
constexpr std::string_view backend_resource = "backend:work";
constexpr long max_work_ms = 60'000;

response reply(const request& req, unsigned status, std::string body,
               std::string_view content_type = "text/plain") {
  response res;
  res.version(req.version());
  res.result(status);
  res.keep_alive(req.keep_alive());
  // 1xx, 204 and 304 responses carry no body and no Content-Length (RFC 9110, sections 8.6 and
  // 15.4.5); a 205 no body, which Content-Length: 0 says (section 15.3.6).
  if (status < 200 || status == 204 || status == 304) {
    return res;
  }
  if (status != 205) {
    res.set(http::field::content_type, content_type);
    if (req.method() == http::verb::head) {
      // Only GET routes are served, so HEAD is answered 404 where a GET of a route gets 200: no
      // body (a keep-alive client would read one as its next response) and no length (the
      // GET's answer has another one, RFC 9110 section 8.6).
      return res;
    }
    res.body() = std::move(body);
  }
  res.prepare_payload();
  return res;
}

template <class T>
bool parse_number(std::string_view s, T& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && end == s.data() + s.size() && !s.empty();
}

asio::awaitable<void> sleep_for(std::chrono::nanoseconds d) {
  asio::steady_timer timer{co_await asio::this_coro::executor, d};
  co_await timer.async_wait(asio::use_awaitable);
}

/// The demo's endpoints; a request_scope without context means the request is not guarded.
class endpoints {
 public:
  explicit endpoints(engine& eng) : engine_(&eng) {}

  asio::awaitable<response> operator()(request req, floodgate::beast::request_scope& scope) const {
    switch (scope.route().index()) {
      case route_hello:
        co_return reply(req, 200, "hello");
      case route_work:
        co_return co_await work(std::move(req), scope);
      case route_status: {
        // Path parameters are percent-decoded, as the guard reads them for rules and hot keys.
        std::string scratch;
        unsigned code = 0;
        if (!parse_number(
                floodgate::beast::decode_path_segment(scope.route().param("code"), scratch),
                code) ||
            code < 200 || code > 599) {
          co_return reply(req, 400, "status must be 200..599\n");
        }
        co_return reply(req, code, "status " + std::to_string(code) + "\n");
      }
      case route_users: {
        std::string scratch;
        std::string body = R"({"id":")";
        floodgate::beast::append_json_escaped(
            body, floodgate::beast::decode_path_segment(scope.route().param("id"), scratch));
        body += "\"}";
        co_return reply(req, 200, std::move(body), "application/json");
      }
      default:
        co_return reply(req, 404, "not found\n");
    }
  }

 private:
  /// Waits `ms` inside the nested outbound resource backend:work.
  asio::awaitable<response> work(request req, floodgate::beast::request_scope& scope) const {
    long ms = 0;
    std::string scratch;
    if (const auto v = floodgate::beast::find_query_param(req.target(), "ms", scratch)) {
      if (!parse_number(*v, ms) || ms < 0 || ms > max_work_ms) {
        co_return reply(req, 400, "ms must be 0..60000\n");
      }
    }
    entry backend;
    if (floodgate::context* ctx = scope.context()) {
      // Timed in nanoseconds, as the middleware times GET:/work: the duration histogram's
      // buckets (5 ms and up) are not met with millisecond readings rounded down.
      backend = engine_->enter(*ctx, backend_resource,
                               {.precise_duration = true, .proceeds_after_wait = true});
      if (backend.blocked()) {
        co_return floodgate::beast::make_blocked_response(backend.block(), backend_resource,
                                                          req.version(), req.keep_alive());
      }
      if (backend.wait() > std::chrono::nanoseconds::zero()) {
        co_await sleep_for(backend.wait());
        if (!backend.proceed()) {
          co_return floodgate::beast::make_blocked_response(backend.block(), backend_resource,
                                                            req.version(), req.keep_alive());
        }
      }
    }
    co_await sleep_for(std::chrono::milliseconds(ms));
    backend.exit();
    co_return reply(req, 200, "worked " + std::to_string(ms) + " ms\n");
  }

  engine* engine_;
};

asio::awaitable<std::string> render(const floodgate::beast::metrics_handler* metrics) {
  co_return metrics->render();
}

asio::awaitable<http::message_generator> serve_metrics(
    request req, const floodgate::beast::metrics_handler* metrics, asio::thread_pool* pool,
    const std::atomic<bool>* draining) {
  std::string body = co_await asio::co_spawn(*pool, render(metrics), asio::use_awaitable);
  co_return floodgate::beast::make_metrics_response(
      std::move(body), req.version(),
      req.keep_alive() && !draining->load(std::memory_order_relaxed));
}

/// --no-guard: the endpoints without the middleware, named by the same routes; while the
/// server drains, answers close their connection (what guard_options::draining does guarded).
asio::awaitable<http::message_generator> serve_unguarded(
    request req, const endpoints* handler, const floodgate::beast::route_table* routes,
    const std::atomic<bool>* draining) {
  const auto match = routes->match(req.method_string(), req.target());
  floodgate::beast::request_scope scope{nullptr, match.resource(), match, {}};
  response res = co_await (*handler)(std::move(req), scope);
  if (draining->load(std::memory_order_relaxed)) [[unlikely]] {
    res.keep_alive(false);
  }
  co_return http::message_generator{std::move(res)};
}

struct main_handler {
  using guarded_type = floodgate::beast::guarded_handler<endpoints>;

  /// Not a coroutine itself: it hands back the one that serves the request, so neither mode
  /// pays for a dispatch frame (both then run the same number of coroutine frames: the guard's
  /// own frame is what adapts the endpoint's response to a message_generator).
  asio::awaitable<http::message_generator> operator()(request req,
                                                      floodgate::beast::request_info info) const {
    if (req.method() == http::verb::get &&
        floodgate::beast::target_path(req.target()) == "/metrics") {
      return serve_metrics(std::move(req), metrics, render_pool, draining);
    }
    if (guarded) {
      return (*guarded)(std::move(req), info);
    }
    return serve_unguarded(std::move(req), &unguarded, routes, draining);
  }

  std::shared_ptr<guarded_type> guarded;  ///< null with --no-guard
  endpoints unguarded;
  const floodgate::beast::route_table* routes;
  const floodgate::beast::metrics_handler* metrics;
  asio::thread_pool* render_pool;
  const std::atomic<bool>* draining;
};

struct admin_handler {
  asio::awaitable<http::message_generator> operator()(request req,
                                                      floodgate::beast::request_info) const {
    if (floodgate::beast::target_path(req.target()) == floodgate::beast::dashboard_stream::path) {
      // The stream taker serves GET; what reaches here is another method, or a GET while the
      // server stops taking subscribers.
      co_return http::message_generator{stream_refusal(req)};
    }
    co_return http::message_generator{(*admin)(req)};
  }
  static http::response<http::string_body> stream_refusal(const request& req) {
    if (req.method() == http::verb::get) {
      return floodgate::beast::make_error_response(http::status::service_unavailable,
                                                   "shutting down", req.version(), false);
    }
    auto res = floodgate::beast::make_error_response(
        http::status::method_not_allowed, "method not allowed", req.version(), req.keep_alive());
    res.set(http::field::allow, "GET");
    if (req.method() == http::verb::head) floodgate::beast::drop_body_and_length(res);
    return res;
  }
  const floodgate::beast::admin_api* admin;
};

}  // namespace

floodgate::beast::route_table demo_routes() {
  floodgate::beast::route_table routes;
  routes.add("GET", "/hello");          // route_hello
  routes.add("GET", "/work");           // route_work
  routes.add("GET", "/status/{code}");  // route_status
  routes.add("GET", "/users/{id}");     // route_users
  return routes;
}

request_handler make_main_handler(engine& eng, const floodgate::beast::route_table& routes,
                                  const demo_options& options,
                                  const floodgate::beast::metrics_handler& metrics,
                                  asio::thread_pool& render_pool,
                                  const std::atomic<bool>& draining) {
  main_handler h{nullptr, endpoints{eng}, &routes, &metrics, &render_pool, &draining};
  if (options.guard) {
    floodgate::beast::guard_options g;
    g.routes = &routes;
    g.origin_header = options.origin_header;
    g.rate_limit_headers = options.rate_limit_headers;
    g.draining = &draining;
    h.guarded = std::make_shared<main_handler::guarded_type>(eng, std::move(g), endpoints{eng});
  }
  return h;
}

request_handler make_admin_handler(const floodgate::beast::admin_api& admin) {
  return admin_handler{&admin};
}

connection_taker make_stream_taker(floodgate::beast::dashboard_stream& stream) {
  return [&stream](const request& req, tcp::socket& socket) {
    if (req.method() != http::verb::get ||
        floodgate::beast::target_path(req.target()) != floodgate::beast::dashboard_stream::path) {
      return false;
    }
    stream.subscribe(std::move(socket));
    return true;
  };
}

}  // namespace floodgate::demo
