// Type traits of the handlers a guarded_handler accepts.
#pragma once

#include <floodgate/beast/request_scope.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/message.hpp>

#include <functional>
#include <type_traits>
#include <utility>

namespace floodgate::beast {

namespace http = boost::beast::http;

namespace detail {

template <class T>
struct awaitable_traits : std::false_type {
  using value_type = T;
};
template <class T, class Executor>
struct awaitable_traits<boost::asio::awaitable<T, Executor>> : std::true_type {
  using value_type = T;
  using executor_type = Executor;
};

template <class T>
struct is_response : std::false_type {};
template <class Body, class Fields>
struct is_response<http::response<Body, Fields>> : std::true_type {};

/// Calls `h(req, scope)`, or `h(req)` for handlers that do not need the scope.
template <class Handler, class Request>
decltype(auto) invoke_handler(Handler& h, Request&& req, request_scope& scope) {
  if constexpr (std::is_invocable_v<Handler&, Request&&, request_scope&>) {
    return std::invoke(h, std::forward<Request>(req), scope);
  } else {
    return std::invoke(h, std::forward<Request>(req));
  }
}

template <class Handler, class Request>
using handler_result_t = decltype(invoke_handler(std::declval<Handler&>(),
                                                 std::declval<Request&&>(),
                                                 std::declval<request_scope&>()));

/// The executor of a guarded call: the handler's own for coroutines, else `Default`.
template <class Result, class Default>
struct guard_executor {
  using type = Default;
};
template <class T, class Executor, class Default>
struct guard_executor<boost::asio::awaitable<T, Executor>, Default> {
  using type = Executor;
};
template <class Result, class Default>
using guard_executor_t = typename guard_executor<Result, Default>::type;

}  // namespace detail

}  // namespace floodgate::beast
