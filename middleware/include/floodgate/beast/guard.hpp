// The Beast middleware: wraps a request handler in a floodgate inbound entry.
#pragma once

#include <floodgate/beast/blocked_response.hpp>
#include <floodgate/beast/detail/handler_traits.hpp>
#include <floodgate/beast/detail/resource_cache.hpp>
#include <floodgate/beast/guard_options.hpp>
#include <floodgate/beast/request_scope.hpp>
#include <floodgate/engine/engine.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/message_generator.hpp>

#include <concepts>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

namespace floodgate::beast {

/** A request handler usable by a guarded_handler: called with the request (and optionally the
    request_scope), it returns a response — `http::response<B, F>` or `http::message_generator`
    — directly or through `asio::awaitable`. Only concrete responses can be traced as errors by
    status; a `message_generator` hides its status, so then only exceptions count. */
template <class Handler, class Body, class Fields>
concept request_handler =
    std::constructible_from<http::message_generator,
                            typename detail::awaitable_traits<detail::handler_result_t<
                                Handler, http::request<Body, Fields>>>::value_type>;

/** Wraps a Beast request handler with floodgate (SPEC §4).

    Every call opens one context (entrance `guard_options::context_name`, the request's origin),
    enters the request's resource as an inbound entry and then:
    - blocked: answers from make_blocked_response() without calling the handler;
    - throttled (entry wait > 0): waits on an asynchronous timer first (the thread keeps serving);
    - otherwise calls the handler with the request and a request_scope; a response whose status
      `is_error()` or a thrown exception (answered 500) is traced as an error.
    The entry exits exactly once on every path — response, exception, cancellation of the
    coroutine (client gone, server shutdown) or destruction of its frame — before the response is
    written, so response time covers the handler only.

    Generic over the body and fields types; sync handlers and `asio::awaitable` handlers alike.
    The call is always an `asio::awaitable<http::message_generator, Executor>` (the handler's
    executor for coroutine handlers, `Executor` for sync ones).

    @par Thread Safety
    Calls may run concurrently on any threads; the guarded_handler must outlive them.

    @par Example
    @code
    auto guarded = floodgate::beast::guard(engine, {.routes = &routes, .origin_header = "X-Origin"},
        [](http::request<http::string_body>&& req, floodgate::beast::request_scope& scope) {
          http::response<http::string_body> res{http::status::ok, req.version()};
          res.body() = "hello";
          res.prepare_payload();
          return res;
        });
    http::message_generator msg = co_await guarded(std::move(req), {.peer = peer});
    @endcode
*/
template <class Handler, class Executor = boost::asio::any_io_executor>
class guarded_handler {
 public:
  guarded_handler(engine& eng, guard_options options, Handler handler)
      : engine_(&eng),
        options_(std::move(options)),
        handler_(std::move(handler)),
        resources_(options_.routes != nullptr ? options_.routes->size() : 0),
        origin_code_(http::string_to_field(options_.origin_header)) {}

  template <class Body, class Fields>
  requires request_handler<Handler, Body, Fields>
  auto operator()(http::request<Body, Fields> req, request_info info = {})
      -> boost::asio::awaitable<
          http::message_generator,
          detail::guard_executor_t<detail::handler_result_t<Handler, http::request<Body, Fields>>,
                                   Executor>>;

  const guard_options& options() const noexcept { return options_; }
  Handler& handler() noexcept { return handler_; }

 private:
  template <class Body, class Fields>
  route_match match_route(const http::request<Body, Fields>& req, const request_info& info) const;
  template <class Body, class Fields>
  std::string_view resolve_resource(const http::request<Body, Fields>& req,
                                    const request_info& info, const route_match& match,
                                    std::string& storage) const;
  template <class Fields>
  std::string resolve_origin(const Fields& fields, const request_info& info) const;
  template <class Body, class Fields>
  entry enter(context& ctx, const http::request<Body, Fields>& req, const request_info& info,
              const route_match& match, std::string_view resource, std::string_view origin);
  /// The rate-limit fields to write: the options', else the rules in force's.
  rate_limit_header_style header_style() const noexcept {
    return options_.rate_limit_headers ? *options_.rate_limit_headers
                                       : engine_->rate_limit_headers();
  }
  /// Whether the server is draining (guard_options::draining): answers close their connection.
  bool draining() const noexcept {
    return options_.draining != nullptr && options_.draining->load(std::memory_order_relaxed);
  }
  /// The quota for the rate-limit fields; nothing when they are off.
  quota_status quota_of(const context& ctx, const entry& e) const noexcept;
  template <class Result>
  http::message_generator finish(entry& e, Result&& res, const quota_status& quota) const;
  // The answers made without suspending, out of the coroutine: what a coroutine's body holds
  // lives in its frame, allocated per request, and a frame over about 1 KB is neither recycled
  // by asio (1 020 bytes) nor served by glibc's tcache (1 032): malloc's slow path every time.
  http::message_generator blocked(const entry& e, std::string_view resource, unsigned version,
                                  bool keep_alive, const quota_status& quota, bool head) const;
  static http::message_generator failed(unsigned version, bool keep_alive, bool head);

  engine* engine_;
  guard_options options_;
  Handler handler_;
  detail::resource_cache resources_;  ///< by route index, for names from options_.routes
  detail::entrance_cache entrance_;   ///< options_.context_name
  http::field origin_code_;           ///< Beast's code for options_.origin_header (or unknown)
};

/// Makes a guarded_handler; see there.
template <class Handler>
guarded_handler<std::decay_t<Handler>> guard(engine& eng, guard_options options,
                                             Handler&& handler) {
  return {eng, std::move(options), std::forward<Handler>(handler)};
}

}  // namespace floodgate::beast

#include <floodgate/beast/impl/guard.hpp>
