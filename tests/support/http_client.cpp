#include "support/http_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <algorithm>
#include <cctype>
#include <sys/socket.h>
#include <sys/time.h>

namespace floodgate::test {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

std::string http_response::header(std::string_view name) const {
  const auto it = headers.find(lower(name));
  return it == headers.end() ? std::string{} : it->second;
}

bool http_response::has_header(std::string_view name) const {
  return headers.count(lower(name)) != 0;
}

struct http_connection::impl {
  asio::io_context io;
  tcp::socket socket{io};
  boost::beast::flat_buffer buffer;
  bool ok = false;
};

http_connection::http_connection(std::uint16_t port, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<impl>()) {
  boost::system::error_code ec;
  impl_->socket.connect({asio::ip::address_v4::loopback(), port}, ec);
  if (ec) return;
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(impl_->socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(impl_->socket.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  impl_->ok = true;
}

http_connection::~http_connection() = default;

bool http_connection::connected() const { return impl_->ok; }

http_response http_connection::get(std::string_view target, const header_list& headers) {
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, "127.0.0.1");
  for (const auto& [name, value] : headers) {
    req.set(name, value);
  }
  boost::system::error_code ec;
  http::write(impl_->socket, req, ec);
  if (ec) return {};
  return read_response();
}

void http_connection::send_raw(std::string_view bytes) {
  boost::system::error_code ec;
  asio::write(impl_->socket, asio::buffer(bytes.data(), bytes.size()), ec);
}

http_response http_connection::read_response(bool head) {
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  parser.skip(head);
  boost::system::error_code ec;
  http::read(impl_->socket, impl_->buffer, parser, ec);
  if (ec) return {};
  const auto& msg = parser.get();
  http_response r;
  r.status = msg.result_int();
  for (const auto& f : msg) {
    r.headers[lower(std::string_view{f.name_string()})] = std::string(f.value());
  }
  r.body = msg.body();
  return r;
}

bool http_connection::closed_by_peer() {
  char c = 0;
  boost::system::error_code ec;
  const std::size_t n = impl_->socket.read_some(asio::buffer(&c, 1), ec);
  return n == 0 && (ec == asio::error::eof || ec == asio::error::connection_reset);
}

void http_connection::close() {
  boost::system::error_code ec;
  impl_->socket.close(ec);
}

http_response http_get(std::uint16_t port, std::string_view target, const header_list& headers) {
  http_connection c{port};
  if (!c.connected()) return {};
  header_list with_close = headers;
  with_close.emplace_back("Connection", "close");
  return c.get(target, with_close);
}

bool can_connect(std::uint16_t port) {
  asio::io_context io;
  tcp::socket s{io};
  boost::system::error_code ec;
  s.connect({asio::ip::address_v4::loopback(), port}, ec);
  return !ec;
}

}  // namespace floodgate::test
