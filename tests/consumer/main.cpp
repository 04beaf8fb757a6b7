// Serves guarded requests over a real socket with floodgate found by find_package: the rule file
// is parsed (floodgate::config), the guard answers (floodgate::beast on floodgate::asio), the
// engine counts (floodgate::core), and the Redis adapter (floodgate::redis) follows the rules, idle
// with no clusterMode rule. Exits 0 when /hello passes once and is then limited with 429.
#include <floodgate/beast/guard.hpp>
#include <floodgate/beast/route_table.hpp>
#include <floodgate/cluster/redis_cluster.hpp>
#include <floodgate/config/rule_file.hpp>
#include <floodgate/engine/engine.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <iostream>

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

int main() {
  const auto parsed = floodgate::config::parse_rules(
      "flow: [{resource: \"GET:/hello\", count: 1}]", "consumer.yaml");
  if (!parsed.ok()) {
    std::cerr << parsed.error_text();
    return 1;
  }
  floodgate::engine eng;
  if (!eng.load_rules(*parsed.rules)) return 1;
  const floodgate::cluster::redis_cluster redis{eng};
  floodgate::beast::route_table routes;
  routes.add("GET", "/hello");
  auto guarded = floodgate::beast::guard(
      eng, {.routes = &routes},
      [](http::request<http::string_body>&& req, floodgate::beast::request_scope&) {
        http::response<http::string_body> res{http::status::ok, req.version()};
        res.body() = "hello";
        res.prepare_payload();
        return res;
      });

  asio::io_context io;
  tcp::acceptor acceptor{io, {asio::ip::make_address("127.0.0.1"), 0}};
  std::vector<unsigned> statuses;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {  // the server: one connection, keep-alive
        tcp::socket s = co_await acceptor.async_accept(asio::use_awaitable);
        boost::beast::flat_buffer buf;
        for (int i = 0; i < 2; ++i) {
          http::request<http::string_body> req;
          co_await http::async_read(s, buf, req, asio::use_awaitable);
          http::message_generator msg = co_await guarded(std::move(req), {});
          co_await boost::beast::async_write(s, std::move(msg), asio::use_awaitable);
        }
      },
      asio::detached);
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {  // the client
        tcp::socket s{io};
        co_await s.async_connect(acceptor.local_endpoint(), asio::use_awaitable);
        boost::beast::flat_buffer buf;
        for (int i = 0; i < 2; ++i) {
          http::request<http::string_body> req{http::verb::get, "/hello", 11};
          req.set(http::field::host, "127.0.0.1");
          co_await http::async_write(s, req, asio::use_awaitable);
          http::response<http::string_body> res;
          co_await http::async_read(s, buf, res, asio::use_awaitable);
          statuses.push_back(res.result_int());
        }
      },
      asio::detached);
  io.run();
  const bool ok = statuses == std::vector<unsigned>{200, 429} && redis.status().rules.empty();
  std::cout << "consumer: " << (ok ? "ok" : "FAILED") << " (";
  for (unsigned s : statuses) std::cout << ' ' << s;
  std::cout << " )\n";
  return ok ? 0 : 1;
}
