// How the middleware names resources and callers, and what it counts as an error.
#pragma once

#include <floodgate/beast/client_address.hpp>
#include <floodgate/beast/rate_limit_headers.hpp>
#include <floodgate/beast/route_table.hpp>
#include <floodgate/chain/timer_queue.hpp>

#include <atomic>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace floodgate::beast {

/// Where a request's origin (Sentinel's caller name, for authority and limitApp) comes from.
enum class origin_source : unsigned char {
  header,     ///< guard_options::origin_header; empty when absent
  client_ip,  ///< the client address (the peer, or forwarded by a trusted proxy)
};

/// The default error predicate: 5xx responses are errors.
constexpr bool is_server_error(unsigned status) noexcept { return status >= 500; }

/** Configuration of a guarded handler; fixed for its life.

    @par Example
    @code
    floodgate::beast::guard_options opts;
    opts.routes = &routes;
    opts.origin_header = "X-Origin";
    opts.trusted_proxies.push_back(*floodgate::beast::ip_network::parse("10.0.0.0/8"));
    @endcode
*/
struct guard_options {
  /// Names resources `METHOD:template`; must outlive the guard. Null: everything is unmatched
  /// unless request_info says otherwise.
  const route_table* routes = nullptr;
  /// The context (entrance) name of every request.
  std::string context_name = "http-inbound";
  origin_source origin = origin_source::header;
  /// The header carrying the caller's name (`X-Origin`); empty for none.
  std::string origin_header;
  /// Origins longer than this are cut: node memory stays bounded whatever clients send.
  std::size_t max_origin_length = 128;
  /// Peers whose forwarding header is believed (client IP for origin and paramFlow).
  std::vector<ip_network> trusted_proxies;
  std::string forwarded_header = "X-Forwarded-For";
  /// Which response statuses are errors for statistics and circuit breakers.
  bool (*is_error)(unsigned status) noexcept = &is_server_error;
  /** Holds throttled requests back; must outlive the guard. Null: an Asio steady timer on the
      request's executor, which a cancelled request (client gone, shutdown) leaves at once. Tests
      pass a manual_timer_queue on the engine's manual clock; a request waiting there leaves
      when its callback runs. */
  timer_queue* timers = nullptr;
  /** Tell clients their limit on every guarded response, passed or blocked, that a QPS flow
      rule applied to (engine::quota: the strictest such rule): Envoy's `x-ratelimit-*` fields
      (`draft03`) or the IETF `RateLimit-Policy` / `RateLimit` fields (`ietf`). Unset (the
      default): as the rules in force say (the rule file's `rateLimitHeaders`, read on every
      request, so a reload turns them on or off), which is off when they say nothing. Off:
      nothing is computed. */
  std::optional<rate_limit_header_style> rate_limit_headers;
  /** A server's drain flag (set when it begins a graceful shutdown), or null: while it reads
      true, every answer the guard makes, and every response a handler returns to it, says
      `Connection: close` (a handler that returns a message_generator sets that itself), so a
      keep-alive client does not send its next request onto a connection the server closes
      after this answer. Must outlive the guard. */
  const std::atomic<bool>* draining = nullptr;
};

}  // namespace floodgate::beast
