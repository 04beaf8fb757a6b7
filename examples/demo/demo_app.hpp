// The demo's endpoints (SPEC §5) and the handlers of its two ports.
#pragma once

#include "demo_options.hpp"
#include "http_server.hpp"

#include <floodgate/beast/admin_api.hpp>
#include <floodgate/beast/dashboard_stream.hpp>
#include <floodgate/beast/metrics_handler.hpp>
#include <floodgate/beast/route_table.hpp>
#include <floodgate/engine/engine.hpp>

#include <boost/asio/thread_pool.hpp>

#include <atomic>

namespace floodgate::demo {

/// The routes of the main port, in the order their indices are numbered.
enum route_id : std::size_t { route_hello, route_work, route_status, route_users };

/// `GET /hello`, `GET /work`, `GET /status/{code}`, `GET /users/{id}`.
floodgate::beast::route_table demo_routes();

/** The handler of the main port: `GET /metrics` (not guarded, rendered on `render_pool` so I/O
    threads never stall), everything else through the middleware — or straight to the endpoints
    with `--no-guard`. Answers made once `draining` is set (the first shutdown signal) say
    `Connection: close`: the server closes each connection after its answer in flight, and a
    keep-alive client told so sends its next request elsewhere. Every reference must outlive the
    server. */
request_handler make_main_handler(engine& eng, const floodgate::beast::route_table& routes,
                                  const demo_options& options,
                                  const floodgate::beast::metrics_handler& metrics,
                                  asio::thread_pool& render_pool,
                                  const std::atomic<bool>& draining);

/// The handler of the admin port.
request_handler make_admin_handler(const floodgate::beast::admin_api& admin);

/// Hands `GET /floodgate/stream` connections of the admin port to `stream`.
connection_taker make_stream_taker(floodgate::beast::dashboard_stream& stream);

}  // namespace floodgate::demo
