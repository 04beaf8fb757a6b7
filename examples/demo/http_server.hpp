// The demo's HTTP/1.1 server: coroutine sessions, size limits, graceful shutdown.
#pragma once

#include <floodgate/beast/request_scope.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/message_generator.hpp>
#include <boost/beast/http/string_body.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

namespace floodgate::demo {

namespace asio = boost::asio;
namespace beast = boost::beast;  // floodgate's own middleware is spelled floodgate::beast here
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

using request = http::request<http::string_body>;

/// Answers one request; runs on the connection's thread and may suspend.
using request_handler = std::function<asio::awaitable<http::message_generator>(
    request, floodgate::beast::request_info)>;

/** Takes over a connection whose request it wants (e.g. a Server-Sent Events stream): it
    moves the socket out and returns true, or leaves it alone and returns false so that the
    request_handler answers. Runs on the connection's thread. */
using connection_taker = std::function<bool(const request&, tcp::socket&)>;

struct server_limits {
  std::size_t header_limit = 8 * 1024;    ///< request line + fields + blank line; larger: 431
  std::size_t body_limit = 1024 * 1024;   ///< larger bodies: 413
  /** Bytes read ahead of the parser, at least header_limit: a chunk's size line with its
      extensions, and a chunked body's trailer, must fit whole (larger: 400). Beast's header
      limit does not apply to trailers, and a trailer field of 64 KiB or more made Beast throw
      from inside a read's completion, which ended the process. */
  std::size_t read_ahead_limit = 16 * 1024;
  /** Connections served at once; one more is answered 503 and closed at once. Each holds a
      descriptor and may buffer a body up to body_limit: without a bound a flood of connections
      took every descriptor of the process (the admin port's too) or a GiB per thousand. */
  std::size_t max_connections = 4096;
  std::chrono::seconds read_timeout{30};  ///< idle keep-alive and slow requests
  std::chrono::seconds write_timeout{30};
};

/** One listening socket whose connections are spread over a set of io_contexts (one thread
    each: a connection never needs a strand).

    While a request is handled the session also watches its socket: a client that goes away
    cancels the handler's coroutine, so its floodgate entries exit at once.

    @par Thread Safety
    shutdown(), abort() and connections() from any thread.
*/
class http_server {
 public:
  /** Binds and listens (throws std::runtime_error naming the endpoint: "cannot listen on
      127.0.0.1:8080 (bind): Address already in use"); accepts once start() is called. */
  http_server(std::vector<asio::io_context*> contexts, const tcp::endpoint& endpoint,
              request_handler handler, server_limits limits = {},
              connection_taker taker = {});
  ~http_server();
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  tcp::endpoint local_endpoint() const;
  void start();
  /** Stops accepting (new connections are refused), closes idle keep-alive connections and
      lets requests in flight finish; their connections close after the response. */
  void shutdown();
  /// Closes every connection left (the drain timeout passed): handlers are cancelled.
  void abort();
  /// Connections open now.
  std::size_t connections() const noexcept;

  struct shard;

 private:
  asio::awaitable<void> accept_loop();

  std::vector<std::shared_ptr<shard>> shards_;
  tcp::acceptor acceptor_;
  std::shared_ptr<const request_handler> handler_;
  std::shared_ptr<const connection_taker> taker_;
  server_limits limits_;
  std::shared_ptr<std::atomic<std::size_t>> connections_;
  std::size_t next_shard_ = 0;
};

}  // namespace floodgate::demo
