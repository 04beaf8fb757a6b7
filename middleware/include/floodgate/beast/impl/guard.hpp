// guarded_handler's implementation (included by guard.hpp).
#pragma once

#include <floodgate/beast/detail/request_params.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <exception>
#include <memory>

namespace floodgate::beast {

namespace detail {

/** Waits `duration` on an asynchronous timer (a throttled request). A coroutine of its own, so
    the guard's frame holds no timer: a smaller frame on every request that does not wait. */
template <class Executor>
boost::asio::awaitable<void, Executor> wait_for(std::chrono::nanoseconds duration) {
  namespace asio = boost::asio;
  asio::basic_waitable_timer<std::chrono::steady_clock,
                             asio::wait_traits<std::chrono::steady_clock>, Executor>
      timer{co_await asio::this_coro::executor, duration};
  co_await timer.async_wait(asio::use_awaitable_t<Executor>{});
}

/** Waits `duration` on an injected timer queue; resumes the coroutine on its own executor,
    whatever thread runs the queue's callback. */
template <class Executor>
boost::asio::awaitable<void, Executor> wait_for(timer_queue& timers,
                                                std::chrono::nanoseconds duration) {
  namespace asio = boost::asio;
  asio::use_awaitable_t<Executor> token;
  co_await asio::async_initiate<asio::use_awaitable_t<Executor>, void()>(
      [&timers, duration](auto handler) {
        auto ex = asio::get_associated_executor(handler);
        timers.schedule(duration, [ex, h = std::make_shared<decltype(handler)>(
                                           std::move(handler))]() mutable {
          asio::post(ex, [h]() mutable { std::move(*h)(); });
        });
      },
      token);
}

}  // namespace detail

template <class Handler, class Executor>
template <class Body, class Fields>
requires request_handler<Handler, Body, Fields>
auto guarded_handler<Handler, Executor>::operator()(http::request<Body, Fields> req,
                                                    request_info info)
    -> boost::asio::awaitable<
        http::message_generator,
        detail::guard_executor_t<detail::handler_result_t<Handler, http::request<Body, Fields>>,
                                 Executor>> {
  namespace asio = boost::asio;
  using result_type = detail::handler_result_t<Handler, http::request<Body, Fields>>;
  using executor_type = detail::guard_executor_t<result_type, Executor>;

  // Everything the response needs is taken before the request moves into the handler.
  const unsigned version = req.version();
  const bool keep_alive = detail::keep_alive(req.base(), version);
  const bool head = req.method() == http::verb::head;  // answered without a body
  const route_match match = match_route(req, info);  // built in place: it is 88 bytes
  std::string resource_storage;
  const std::string_view resource = resolve_resource(req, info, match, resource_storage);
  const std::string origin = resolve_origin(req.base(), info);

  // Declared in this order so the entry exits (destructor) before its context goes.
  floodgate::context ctx{*engine_, entrance_.get(*engine_, options_.context_name), origin};
  entry e = enter(ctx, req, info, match, resource, origin);
  if (e.blocked()) {
    co_return blocked(e, resource, version, keep_alive, quota_of(ctx, e), head);
  }
  if (e.wait() > std::chrono::nanoseconds::zero()) {
    // Throttled: wait without holding the thread. Cancellation throws; the entry still exits.
    if (options_.timers != nullptr) {
      co_await detail::wait_for<executor_type>(*options_.timers, e.wait());
    } else {
      co_await detail::wait_for<executor_type>(e.wait());
    }
    // Counted as passed and in flight from now, as Sentinel counts after its sleep; a QPS rule
    // checked when the wait ends (as Sentinel's FlowSlot checks after the sleep) may block it.
    if (!e.proceed()) {
      co_return blocked(e, resource, version, keep_alive, quota_of(ctx, e), head);
    }
  }
  const quota_status quota = quota_of(ctx, e);  // after proceed(): the window holds this pass

  request_scope scope{&ctx, resource, match, origin};
  std::exception_ptr failure;
  try {
    if constexpr (detail::awaitable_traits<result_type>::value) {
      co_return finish(e, co_await detail::invoke_handler(handler_, std::move(req), scope), quota);
    } else {
      co_return finish(e, detail::invoke_handler(handler_, std::move(req), scope), quota);
    }
  } catch (...) {
    failure = std::current_exception();
  }
  // A cancelled request (client gone, shutdown) is not the handler's failure: exit, propagate.
  const auto state = co_await asio::this_coro::cancellation_state;
  if (state.cancelled() != asio::cancellation_type::none) {
    e.exit();
    std::rethrow_exception(failure);
  }
  e.trace_error();
  e.exit();
  co_return failed(version, keep_alive && !draining(), head);
}

template <class Handler, class Executor>
http::message_generator guarded_handler<Handler, Executor>::blocked(
    const entry& e, std::string_view resource, unsigned version, bool keep_alive,
    const quota_status& quota, bool head) const {
  auto res = make_blocked_response(e.block(), resource, version, keep_alive && !draining());
  set_rate_limit_headers(res, header_style(), quota);
  if (head) drop_body(res);
  return http::message_generator{std::move(res)};
}

template <class Handler, class Executor>
quota_status guarded_handler<Handler, Executor>::quota_of(const context& ctx,
                                                          const entry& e) const noexcept {
  return header_style() == rate_limit_header_style::off ? quota_status{} : engine_->quota(ctx, e);
}

template <class Handler, class Executor>
http::message_generator guarded_handler<Handler, Executor>::failed(unsigned version,
                                                                   bool keep_alive, bool head) {
  auto res = make_error_response(http::status::internal_server_error, "internal server error",
                                 version, keep_alive);
  if (head) drop_body(res);
  return http::message_generator{std::move(res)};
}

template <class Handler, class Executor>
template <class Body, class Fields>
route_match guarded_handler<Handler, Executor>::match_route(const http::request<Body, Fields>& req,
                                                            const request_info& info) const {
  if (options_.routes == nullptr || !info.resource.empty() || !info.route.empty()) {
    return {};  // no table, or the application named the resource itself
  }
  return options_.routes->match(std::string_view{req.method_string()},
                                std::string_view{req.target()});
}

template <class Handler, class Executor>
template <class Body, class Fields>
std::string_view guarded_handler<Handler, Executor>::resolve_resource(
    const http::request<Body, Fields>& req, const request_info& info, const route_match& match,
    std::string& storage) const {
  if (!info.resource.empty()) {
    return info.resource;
  }
  if (!info.route.empty()) {
    const std::string_view method{req.method_string()};
    storage.reserve(method.size() + 1 + info.route.size());
    storage.append(method).append(":").append(info.route);
    return storage;
  }
  return match.resource();  // `<unmatched>` without a table or a matching route
}

template <class Handler, class Executor>
template <class Fields>
std::string guarded_handler<Handler, Executor>::resolve_origin(const Fields& fields,
                                                               const request_info& info) const {
  if (options_.origin == origin_source::client_ip) {
    return detail::resolve_client(fields, info.peer, options_).to_string();
  }
  if (!options_.origin_header.empty()) {
    if (const auto v = detail::find_field(fields, {options_.origin_header, origin_code_})) {
      return std::string{v->substr(0, options_.max_origin_length)};
    }
  }
  return {};
}

template <class Handler, class Executor>
template <class Body, class Fields>
entry guarded_handler<Handler, Executor>::enter(context& ctx,
                                                const http::request<Body, Fields>& req,
                                                const request_info& info, const route_match& match,
                                                std::string_view resource,
                                                std::string_view origin) {
  const detail::request_params<Fields> params{req.base(), req.target(), origin,
                                              info.peer,  options_,     &match};
  const entry_options options{.type = entry_type::inbound,
                              .params = params.extractor(),
                              .precise_duration = true,
                              .proceeds_after_wait = true};
  // A name the application chose is looked up as given; a null context never creates resources.
  if (ctx.is_null() || !info.resource.empty() || !info.route.empty()) {
    return engine_->enter(ctx, resource, options);
  }
  return engine_->enter(ctx, resources_.handle(*engine_, match.index(), resource), options);
}

template <class Handler, class Executor>
template <class Result>
http::message_generator guarded_handler<Handler, Executor>::finish(
    entry& e, Result&& res, const quota_status& quota) const {
  if constexpr (detail::is_response<std::decay_t<Result>>::value) {
    if (options_.is_error(res.result_int())) {
      e.trace_error();
    }
    // A 429 the handler answered itself (a nested resource's block, a limit of its own) says
    // the caller is limited: the quota this resource has left would contradict it.
    if (quota && res.result() != http::status::too_many_requests) [[unlikely]] {
      set_rate_limit_headers(res.base(), header_style(), quota);
    }
    if (draining()) [[unlikely]] {
      res.keep_alive(false);
    }
  }
  e.exit();
  return http::message_generator{std::forward<Result>(res)};
}

}  // namespace floodgate::beast
