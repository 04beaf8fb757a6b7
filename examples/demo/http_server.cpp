#include "http_server.hpp"

#include <floodgate/beast/blocked_response.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <boost/beast/http/write.hpp>

#include <algorithm>
#include <list>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <tuple>

namespace floodgate::demo {

namespace {

using namespace asio::experimental::awaitable_operators;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

/// The status for a request that could not be parsed, or 0 to just close.
http::status parse_error_status(const boost::system::error_code& ec) {
  if (ec == http::error::header_limit) return http::status::request_header_fields_too_large;
  if (ec == http::error::body_limit) return http::status::payload_too_large;
  if (ec == http::error::end_of_stream || ec == http::error::partial_message) {
    return http::status::unknown;  // the client went away
  }
  if (ec.category() == make_error_code(http::error::bad_target).category()) {
    return http::status::bad_request;
  }
  return http::status::unknown;
}

/// RFC 3986's unreserved and sub-delims characters: what a host name may hold besides `%XX`.
bool host_char(char c) {
  constexpr std::string_view others = "-._~!$&'()*+,;=";
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         others.find(c) != std::string_view::npos;
}

bool hex_digit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/** Whether `v` is a Host field value (RFC 9110 section 7.2): `uri-host [ ":" port ]`, the host
    an IP literal in brackets or a name of RFC 3986's characters (percent-encoded ones too); a
    `port` is digits, maybe none. Empty is valid: a target without an authority sends it so. */
bool valid_host(std::string_view v) {
  std::size_t end = 0;  // where the host ends
  if (!v.empty() && v.front() == '[') {
    end = v.find(']');
    if (end == std::string_view::npos || end == 1) return false;
    for (const char c : v.substr(1, end - 1)) {
      if (!host_char(c) && c != ':') return false;
    }
    ++end;
  } else {
    for (; end < v.size() && v[end] != ':'; ++end) {
      if (v[end] == '%') {
        if (end + 2 >= v.size() || !hex_digit(v[end + 1]) || !hex_digit(v[end + 2])) return false;
        end += 2;
      } else if (!host_char(v[end])) {
        return false;
      }
    }
  }
  if (end == v.size()) return true;
  if (v[end] != ':') return false;
  for (const char c : v.substr(end + 1)) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

/** Whether the request-target has one of the four forms of RFC 9112 section 3.2: origin form
    (`/path?query`), absolute form (`scheme:...`), authority form (`host:port`, CONNECT only) or
    asterisk form (`*`, OPTIONS only). */
bool valid_target(http::verb method, std::string_view target) {
  if (method == http::verb::connect) {  // authority form only, with a port
    const std::size_t bracket = target.rfind(']');
    const std::size_t colon = target.rfind(':');
    return valid_host(target) && colon != std::string_view::npos &&
           (bracket == std::string_view::npos || colon > bracket);
  }
  if (!target.empty() && target.front() == '/') return true;
  if (method == http::verb::options && target == "*") return true;
  // scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), then ":"
  const std::size_t colon = target.find(':');
  if (colon == 0 || colon == std::string_view::npos) return false;
  for (std::size_t i = 0; i < colon; ++i) {
    const char c = target[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!alpha && (i == 0 || ((c < '0' || c > '9') && c != '+' && c != '-' && c != '.'))) {
      return false;
    }
  }
  return true;
}

/** The status for a request whose header frames it ambiguously, or `unknown` if it is sound.
    Beast takes the body's length from a Transfer-Encoding whose last coding is `chunked`, else
    from Content-Length, else reads none; a proxy in front that reads the same header otherwise
    would see a different next request (request smuggling). So, as RFC 9112 asks (sections
    3.2 and 6.1 to 6.3), the message is refused, and the connection closed, when:
    - it carries Transfer-Encoding in HTTP/1.0, together with Content-Length, or with a last
      coding other than `chunked` or `chunked` twice: 400;
    - it asks for a coding other than `chunked` (gzip, ...), which this server does not decode: 501;
    - it carries two Host fields, or none in HTTP/1.1, or one whose value is not a host
      (section 3.2): 400. An HTTP/1.0 request without Host is served: that version did not
      require it;
    - its request-target has none of the forms of section 3.2 (`GET hello`, `GET *`): 400. */
http::status framing_error(const http::request_parser<http::string_body>& parser) {
  const auto& fields = parser.get();
  const std::size_t hosts = fields.count(http::field::host);
  if (hosts > 1 || (hosts == 0 && fields.version() >= 11)) {
    return http::status::bad_request;
  }
  if (hosts == 1 && !valid_host(fields[http::field::host])) {
    return http::status::bad_request;
  }
  if (!valid_target(fields.method(), fields.target())) {
    return http::status::bad_request;
  }
  const auto encodings = fields.equal_range(http::field::transfer_encoding);
  if (encodings.first == encodings.second) {
    return http::status::unknown;
  }
  if (fields.version() < 11 || fields.count(http::field::content_length) > 0) {
    return http::status::bad_request;
  }
  bool chunked_last = false;
  bool chunked_seen = false;
  bool other = false;
  for (auto it = encodings.first; it != encodings.second; ++it) {
    const http::opt_token_list codings{it->value()};  // empty elements allowed (RFC 9110)
    if (!http::validate_list(codings)) {
      return http::status::bad_request;
    }
    for (const auto coding : codings) {
      const bool is_chunked = beast::iequals(coding, "chunked");
      if (is_chunked && chunked_seen) {
        return http::status::bad_request;
      }
      chunked_seen = chunked_seen || is_chunked;
      other = other || !is_chunked;
      chunked_last = is_chunked;
    }
  }
  if (!chunked_last) {
    return http::status::bad_request;
  }
  return other ? http::status::not_implemented : http::status::unknown;
}

/** Drops the empty lines (CRLF) `buffer` holds before the next request-line: RFC 9112 section
    2.2 asks a server to ignore at least one, as some clients send one after a POST body. Beast's
    parser refuses them (400), so those received with what came before are dropped here. */
void skip_empty_lines(beast::flat_buffer& buffer) {
  for (;;) {
    const auto data = buffer.data();
    const auto* p = static_cast<const char*>(data.data());
    if (data.size() < 2 || p[0] != '\r' || p[1] != '\n') {
      return;
    }
    buffer.consume(2);
  }
}

/** Answers a connection over server_limits::max_connections 503 and closes it, without waiting:
    one non-blocking write (a client whose request is already in the socket may see a reset). */
template <class Socket>
void refuse(Socket& socket) {
  static constexpr std::string_view answer =
      "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\n"
      "Content-Length: 0\r\n\r\n";
  boost::system::error_code ec;
  socket.non_blocking(true, ec);
  socket.write_some(asio::buffer(answer), ec);
  socket.shutdown(Socket::shutdown_send, ec);
  socket.close(ec);
}

}  // namespace

/// One io_context's connections; touched only on that io_context's thread.
struct http_server::shard {
  struct connection {
    beast::tcp_stream* stream;
    const beast::flat_buffer* buffer;
    const http::request_parser<http::string_body>* parser = nullptr;  ///< set while reading
  };

  explicit shard(asio::io_context& c) : context(&c) {}

  void close_idle() {
    stopping = true;
    for (auto& c : live) {
      if (c.parser != nullptr && c.buffer->size() == 0 && !c.parser->got_some()) {
        c.stream->socket().close();
      }
    }
  }
  void close_all() {
    stopping = true;
    for (auto& c : live) {
      c.stream->socket().close();
    }
  }

  asio::io_context* context;
  std::list<connection> live;
  bool stopping = false;
};

namespace {

/** Reads ahead while a handler runs: data (pipelined requests) is kept for the next parse, end
    of stream or an error means the client is gone — returning then cancels the handler. */
asio::awaitable<void> watch_disconnect(beast::tcp_stream& stream, beast::flat_buffer& buffer) {
  for (;;) {
    // Pipelined requests are read ahead up to the buffer's bound (read_ahead_limit), then the
    // watch pauses; the rest waits in the socket.
    const std::size_t room = std::min<std::size_t>(4096, buffer.max_size() - buffer.size());
    if (room == 0) {
      asio::steady_timer forever{co_await asio::this_coro::executor,
                                 asio::steady_timer::duration::max()};
      co_await forever.async_wait(use_tuple);  // ends only by cancellation
      co_return;
    }
    auto [ec, n] = co_await stream.socket().async_read_some(buffer.prepare(room), use_tuple);
    if (ec) {
      co_return;
    }
    buffer.commit(n);
  }
}

/// An HTTP/1.1 request that asks for 100 (Continue) before it sends its body.
bool expects_continue(const request& req) {
  return req.version() >= 11 && beast::iequals(req[http::field::expect], "100-continue");
}

/// Calls the handler; a failure it did not answer itself becomes a 500 (cancellation stays one).
asio::awaitable<http::message_generator> handle(const request_handler& handler, request req,
                                                asio::ip::address peer) {
  const unsigned version = req.version();
  std::exception_ptr failure;
  try {
    co_return co_await handler(std::move(req), {.peer = peer});
  } catch (...) {
    failure = std::current_exception();
  }
  if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) {
    std::rethrow_exception(failure);
  }
  co_return http::message_generator{floodgate::beast::make_error_response(
      http::status::internal_server_error, "internal server error", version, false)};
}

asio::awaitable<void> write_error(beast::tcp_stream& stream, http::status status,
                                  std::chrono::seconds timeout) {
  auto res = floodgate::beast::make_error_response(
      status, std::string(http::obsolete_reason(status)), 11, false);
  stream.expires_after(timeout);
  co_await http::async_write(stream, res, use_tuple);
}

asio::awaitable<void> session(std::shared_ptr<http_server::shard> sh,
                              std::shared_ptr<const request_handler> handler,
                              std::shared_ptr<const connection_taker> taker,
                              std::shared_ptr<std::atomic<std::size_t>> connections,
                              server_limits limits, tcp::socket socket) {
  boost::system::error_code ec;
  const auto peer = socket.remote_endpoint(ec).address();
  beast::tcp_stream stream{std::move(socket)};
  beast::flat_buffer buffer{std::max(limits.read_ahead_limit, limits.header_limit)};
  sh->live.push_back({&stream, &buffer});
  const auto self = std::prev(sh->live.end());
  struct cleanup {
    http_server::shard& sh;
    std::list<http_server::shard::connection>::iterator it;
    std::atomic<std::size_t>& n;
    ~cleanup() {
      sh.live.erase(it);
      n.fetch_sub(1, std::memory_order_acq_rel);
    }
  } on_exit{*sh, self, *connections};

  try {
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(static_cast<std::uint32_t>(limits.header_limit));
      parser.body_limit(limits.body_limit);
      skip_empty_lines(buffer);
      if (sh->stopping && buffer.size() == 0) {
        break;
      }
      self->parser = &parser;
      stream.expires_after(limits.read_timeout);
      auto [read_ec, header_bytes] =
          co_await http::async_read_header(stream, buffer, parser, use_tuple);
      // Beast counts the limit per parse call, not per header: bytes parsed by an earlier call
      // (the request line and first fields, when they arrive first) escape it. Checked whole here.
      if (!read_ec && header_bytes > limits.header_limit) read_ec = http::error::header_limit;
      if (!read_ec) {
        if (const http::status refused = framing_error(parser); refused != http::status::unknown) {
          self->parser = nullptr;
          co_await write_error(stream, refused, limits.write_timeout);
          break;  // the rest of the connection cannot be framed
        }
      }
      if (!read_ec && !parser.is_done() && expects_continue(parser.get())) {
        // RFC 9110 section 10.1.1: a client that waits for 100 (Continue) before it sends the
        // body is told to go on now, not left to its own timeout.
        static constexpr std::string_view go_on = "HTTP/1.1 100 Continue\r\n\r\n";
        stream.expires_after(limits.write_timeout);
        auto [write_ec, n] = co_await asio::async_write(stream, asio::buffer(go_on), use_tuple);
        if (write_ec) break;
        stream.expires_after(limits.read_timeout);
      }
      if (!read_ec && !parser.is_done()) {
        std::tie(read_ec, std::ignore) =
            co_await http::async_read(stream, buffer, parser, use_tuple);
      }
      self->parser = nullptr;
      if (read_ec) {
        // Malformed requests never reach the middleware: no statistics are touched.
        if (const auto status = parse_error_status(read_ec); status != http::status::unknown) {
          co_await write_error(stream, status, limits.write_timeout);
        }
        break;
      }
      // The parser reads every Connection line; message::keep_alive() (which handlers use) only
      // the first: a `close` in a later line must still close (RFC 9112 section 9.6).
      const bool client_closes = !parser.keep_alive();
      request req = parser.release();
      stream.expires_never();
      if (*taker && !sh->stopping && (*taker)(req, stream.socket())) {
        co_return;  // the socket is someone else's now
      }
      if (sh->stopping || (client_closes && req.keep_alive())) {
        req.keep_alive(false);
      }
      stream.expires_never();
      auto outcome =
          co_await (handle(*handler, std::move(req), peer) || watch_disconnect(stream, buffer));
      if (outcome.index() != 0) {
        break;  // the client went away; the handler was cancelled
      }
      http::message_generator msg = std::move(std::get<0>(outcome));
      const bool keep_alive = msg.keep_alive();
      stream.expires_after(limits.write_timeout);
      auto [write_ec, write_n] = co_await beast::async_write(stream, std::move(msg), use_tuple);
      if (write_ec || !keep_alive || sh->stopping) {
        break;
      }
    }
  } catch (const std::exception&) {
    // A handler failure that the middleware did not answer: drop the connection.
  }
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream.socket().close(ec);
}

}  // namespace

http_server::http_server(std::vector<asio::io_context*> contexts, const tcp::endpoint& endpoint,
                         request_handler handler, server_limits limits,
                         connection_taker taker)
    : acceptor_(*contexts.at(0)),
      handler_(std::make_shared<const request_handler>(std::move(handler))),
      taker_(std::make_shared<const connection_taker>(std::move(taker))),
      limits_(limits),
      connections_(std::make_shared<std::atomic<std::size_t>>(0)) {
  // As tcp::acceptor's own constructor does, but a failure names the address and port: the
  // demo listens twice, and "bind: Address already in use" did not say which.
  boost::system::error_code ec;
  const char* step = "open";
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) {
    step = "set SO_REUSEADDR";
    acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  }
  if (!ec) {
    step = "bind";
    acceptor_.bind(endpoint, ec);
  }
  if (!ec) {
    step = "listen";
    acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  }
  if (ec) {
    std::ostringstream where;
    where << endpoint;
    throw std::runtime_error("cannot listen on " + where.str() + " (" + step +
                             "): " + ec.message());
  }
  for (auto* c : contexts) {
    shards_.push_back(std::make_shared<shard>(*c));
  }
}

http_server::~http_server() = default;

tcp::endpoint http_server::local_endpoint() const { return acceptor_.local_endpoint(); }

void http_server::start() {
  asio::co_spawn(acceptor_.get_executor(), accept_loop(), asio::detached);
}

asio::awaitable<void> http_server::accept_loop() {
  for (;;) {
    const auto& sh = shards_[next_shard_++ % shards_.size()];
    auto [ec, socket] = co_await acceptor_.async_accept(*sh->context, use_tuple);
    if (!acceptor_.is_open()) {
      co_return;
    }
    if (ec) {
      // Out of descriptors and the like: back off instead of spinning.
      asio::steady_timer pause{acceptor_.get_executor(), std::chrono::milliseconds(10)};
      co_await pause.async_wait(use_tuple);
      continue;
    }
    if (connections_->load(std::memory_order_acquire) >= limits_.max_connections) {
      refuse(socket);
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    connections_->fetch_add(1, std::memory_order_acq_rel);
    asio::co_spawn(*sh->context, session(sh, handler_, taker_, connections_, limits_, std::move(socket)),
                   asio::detached);
  }
}

void http_server::shutdown() {
  asio::post(acceptor_.get_executor(), [this] {
    boost::system::error_code ec;
    acceptor_.close(ec);
  });
  for (const auto& sh : shards_) {
    asio::post(*sh->context, [sh] { sh->close_idle(); });
  }
}

void http_server::abort() {
  for (const auto& sh : shards_) {
    asio::post(*sh->context, [sh] { sh->close_all(); });
  }
}

std::size_t http_server::connections() const noexcept {
  return connections_->load(std::memory_order_acquire);
}

}  // namespace floodgate::demo
