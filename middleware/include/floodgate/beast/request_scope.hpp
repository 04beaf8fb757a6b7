// What the server tells the middleware about a request, and what the handler gets back.
#pragma once

#include <floodgate/beast/route_table.hpp>
#include <floodgate/engine/context.hpp>

#include <boost/asio/ip/address.hpp>

#include <string_view>

namespace floodgate::beast {

/** What the session knows about a request besides the message.

    The string views must stay valid until the guarded call completes.
*/
struct request_info {
  /// The connection's remote address; unspecified when unknown.
  boost::asio::ip::address peer;
  /// The route template the application's own router matched (`/users/{id}`); empty to use the
  /// guard's route table.
  std::string_view route;
  /// A complete resource name chosen by the application (a user naming function); overrides
  /// `route` and the route table.
  std::string_view resource;
};

/** Given to a guarded handler: the request's floodgate context (to guard the handler's own
    outbound calls as nested resources), its resource name, route match and origin.

    Valid only during the handler call; the handler must not keep it.

    @par Example
    @code
    if (floodgate::context* ctx = scope.context()) {
      auto e = engine.enter(*ctx, "redis:get");  // a child of GET:/users/{id} in the tree
      if (!e) co_return unavailable();
    }
    @endcode
*/
class request_scope {
 public:
  request_scope(floodgate::context* ctx, std::string_view resource, const route_match& route,
                std::string_view origin) noexcept
      : ctx_(ctx), resource_(resource), route_(&route), origin_(origin) {}

  /// The request's context; null when the request is not guarded.
  floodgate::context* context() const noexcept { return ctx_; }
  std::string_view resource() const noexcept { return resource_; }
  const route_match& route() const noexcept { return *route_; }
  std::string_view origin() const noexcept { return origin_; }

 private:
  floodgate::context* ctx_;
  std::string_view resource_;
  const route_match* route_;
  std::string_view origin_;
};

}  // namespace floodgate::beast
