// Rate-limit response fields over a real Beast server on 127.0.0.1:0: off by default; Envoy's
// x-ratelimit-* (draft 03) or the IETF structured RateLimit-Policy / RateLimit fields, on passed
// and blocked responses, for the strictest QPS rule.
#include <floodgate/beast/guard.hpp>
#include <floodgate/chain/clock.hpp>

#include "support/http_client.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace floodgate::beast {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using request = http::request<http::string_body>;
using response = http::response<http::string_body>;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

/// /hello; `/hello?refuse` answers 429 itself, as a handler whose nested resource was blocked.
struct hello {
  response operator()(request&& req) const {
    const bool refuse = req.target().ends_with("?refuse");
    response res{refuse ? http::status::too_many_requests : http::status::ok, req.version()};
    res.body() = refuse ? "limited" : "hello";
    res.prepare_payload();
    return res;
  }
};

/// floodgate-guarded /hello served by Beast on 127.0.0.1:0, on a thread of its own.
class served {
 public:
  /// `style`: the guard's option; unset, the rules' `rateLimitHeaders` decide.
  served(const rule_set& rules, std::optional<rate_limit_header_style> style) {
    EXPECT_TRUE(engine_.load_rules(rules).ok());
    routes_.add("GET", "/hello");
    guard_options o;
    o.routes = &routes_;
    o.origin_header = "X-Origin";
    o.rate_limit_headers = style;
    guarded_.emplace(engine_, std::move(o), hello{});
    asio::co_spawn(io_, accept(), asio::detached);
    thread_ = std::thread([this] { io_.run(); });
  }
  ~served() {
    io_.stop();
    thread_.join();
  }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
  manual_clock& clock() { return clock_; }
  engine& eng() { return engine_; }

 private:
  asio::awaitable<void> accept() {
    for (;;) {
      auto [ec, socket] = co_await acceptor_.async_accept(use_tuple);
      if (ec) co_return;
      asio::co_spawn(io_, session(std::move(socket)), asio::detached);
    }
  }
  asio::awaitable<void> session(tcp::socket socket) {
    boost::beast::flat_buffer buffer;
    for (;;) {
      request req;
      auto [ec, n] = co_await http::async_read(socket, buffer, req, use_tuple);
      if (ec) co_return;
      const bool keep_alive = req.keep_alive();
      http::message_generator msg = co_await (*guarded_)(std::move(req));
      auto [write_ec, written] = co_await boost::beast::async_write(socket, std::move(msg), use_tuple);
      if (write_ec || !keep_alive) co_return;
    }
  }

  manual_clock clock_{1'000'250};
  engine engine_{engine_options{.time = &clock_}};
  route_table routes_;
  std::optional<guarded_handler<hello>> guarded_;
  asio::io_context io_;
  tcp::acceptor acceptor_{io_, {asio::ip::make_address("127.0.0.1"), 0}};
  std::thread thread_;
};

/// One item of a structured-field List (RFC 8941 §3.1) whose bare item is a String and whose
/// parameters are Integers: `"default";q=100;w=1`.
struct sf_item {
  std::string name;
  std::map<std::string, long long> params;
};

/// Parses a List of such items strictly; nullopt on any syntax error.
std::optional<std::vector<sf_item>> parse_sf_list(std::string_view s) {
  std::vector<sf_item> out;
  std::size_t i = 0;
  const auto at = [&](char c) { return i < s.size() && s[i] == c; };
  for (;;) {
    sf_item item;
    if (!at('"')) return std::nullopt;
    for (++i; !at('"'); ++i) {
      if (i >= s.size() || s[i] < 0x20 || s[i] > 0x7e) return std::nullopt;
      if (s[i] == '\\') {
        if (++i >= s.size() || (s[i] != '"' && s[i] != '\\')) return std::nullopt;
      }
      item.name += s[i];
    }
    ++i;
    while (at(';')) {
      ++i;
      while (at(' ')) ++i;
      std::string key;
      if (i >= s.size() || !(std::islower(static_cast<unsigned char>(s[i])) || s[i] == '*')) {
        return std::nullopt;
      }
      while (i < s.size() && (std::islower(static_cast<unsigned char>(s[i])) ||
                              std::isdigit(static_cast<unsigned char>(s[i])) ||
                              std::string_view("_-.*").find(s[i]) != std::string_view::npos)) {
        key += s[i++];
      }
      if (!at('=')) return std::nullopt;  // these fields' parameters all carry integers
      ++i;
      const std::size_t start = i;
      if (at('-')) ++i;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
      const std::size_t digits = i - start - (s[start] == '-' ? 1 : 0);
      if (digits == 0 || digits > 15) return std::nullopt;
      item.params[key] = std::stoll(std::string(s.substr(start, i - start)));
    }
    out.push_back(std::move(item));
    while (at(' ') || at('\t')) ++i;
    if (i == s.size()) return out;
    if (!at(',')) return std::nullopt;
    ++i;
    while (at(' ') || at('\t')) ++i;
  }
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

const rule_set three_per_second{.flow = {{.resource = "GET:/hello", .count = 3}}};

const char* const every_rate_limit_field[] = {"x-ratelimit-limit", "x-ratelimit-remaining",
                                              "x-ratelimit-reset", "ratelimit-policy",
                                              "ratelimit"};

TEST(RateLimitHeaders, OffByDefaultNoFieldOnPassOrBlock) {
  served s{three_per_second, std::nullopt};
  test::http_connection c{s.port()};
  for (int i = 0; i < 4; ++i) {
    const test::http_response r = c.get("/hello");
    ASSERT_EQ(r.status, i < 3 ? 200u : 429u);
    for (const char* f : every_rate_limit_field) EXPECT_FALSE(r.has_header(f)) << f;
  }
  EXPECT_FALSE(guard_options{}.rate_limit_headers.has_value()) << "the rules decide";
}

// SPEC §11 names the switch `rateLimitHeaders: off | draft03 | ietf`: the rule file's key, read
// per request, so a reload turns the fields on, changes them, or turns them off.
TEST(RateLimitHeaders, TheRulesInForceChooseTheFieldsWhenTheOptionsDoNot) {
  rule_set rules = three_per_second;
  rules.rate_limit_headers = rate_limit_header_style::ietf;
  served s{rules, std::nullopt};
  test::http_connection c{s.port()};
  test::http_response r = c.get("/hello");
  ASSERT_EQ(r.status, 200u);
  EXPECT_EQ(r.header("ratelimit-policy"), R"("default";q=3;w=1)");
  EXPECT_EQ(r.header("ratelimit"), R"("default";r=2;t=1)");

  rules.rate_limit_headers = rate_limit_header_style::draft03;
  ASSERT_TRUE(s.eng().load_rules(rules).ok());
  r = c.get("/hello");
  EXPECT_EQ(r.header("x-ratelimit-limit"), "3, 3;w=1");
  EXPECT_FALSE(r.has_header("ratelimit-policy"));

  rules.rate_limit_headers.reset();  // the key removed from the file: off
  ASSERT_TRUE(s.eng().load_rules(rules).ok());
  r = c.get("/hello");
  ASSERT_EQ(r.status, 200u);
  for (const char* f : every_rate_limit_field) EXPECT_FALSE(r.has_header(f)) << f;
  r = c.get("/hello");
  ASSERT_EQ(r.status, 429u);
  for (const char* f : every_rate_limit_field) EXPECT_FALSE(r.has_header(f)) << f;
}

TEST(RateLimitHeaders, TheGuardsOptionOverridesTheRules) {
  rule_set rules = three_per_second;
  rules.rate_limit_headers = rate_limit_header_style::ietf;
  served off{rules, rate_limit_header_style::off};
  test::http_connection c{off.port()};
  for (const char* f : every_rate_limit_field) EXPECT_FALSE(c.get("/hello").has_header(f)) << f;
  served draft{rules, rate_limit_header_style::draft03};
  test::http_connection d{draft.port()};
  const test::http_response r = d.get("/hello");
  EXPECT_EQ(r.header("x-ratelimit-limit"), "3, 3;w=1");
  EXPECT_FALSE(r.has_header("ratelimit-policy"));
}

TEST(RateLimitHeaders, Draft03FieldsOnPassAndBlock) {
  served s{three_per_second, rate_limit_header_style::draft03};
  test::http_connection c{s.port()};
  for (int remaining : {2, 1, 0}) {
    const test::http_response r = c.get("/hello");
    ASSERT_EQ(r.status, 200u);
    EXPECT_EQ(r.header("x-ratelimit-limit"), "3, 3;w=1");
    EXPECT_EQ(r.header("x-ratelimit-remaining"), std::to_string(remaining));
    EXPECT_EQ(r.header("x-ratelimit-reset"), "1");  // 750 ms until the window is clear, rounded up
    EXPECT_FALSE(r.has_header("ratelimit"));
  }
  const test::http_response blocked = c.get("/hello");
  ASSERT_EQ(blocked.status, 429u);
  EXPECT_EQ(blocked.header("x-ratelimit-limit"), "3, 3;w=1");
  EXPECT_EQ(blocked.header("x-ratelimit-remaining"), "0");
  EXPECT_EQ(blocked.header("x-ratelimit-reset"), "1");
  EXPECT_EQ(blocked.header("retry-after"), "1");
  EXPECT_EQ(blocked.header("x-floodgate-blocked"), "flow");
}

TEST(RateLimitHeaders, IetfFieldsAreStructuredFieldListsOnPassAndBlock) {
  served s{three_per_second, rate_limit_header_style::ietf};
  test::http_connection c{s.port()};
  for (int i = 0; i < 4; ++i) {
    const test::http_response r = c.get("/hello");
    ASSERT_EQ(r.status, i < 3 ? 200u : 429u);
    const auto policy = parse_sf_list(r.header("ratelimit-policy"));
    const auto limit = parse_sf_list(r.header("ratelimit"));
    ASSERT_TRUE(policy) << r.header("ratelimit-policy");
    ASSERT_TRUE(limit) << r.header("ratelimit");
    ASSERT_EQ(policy->size(), 1u);
    ASSERT_EQ(limit->size(), 1u);
    // The RateLimit item names the policy it reports on.
    EXPECT_EQ((*limit)[0].name, (*policy)[0].name);
    EXPECT_EQ((*policy)[0].params, (std::map<std::string, long long>{{"q", 3}, {"w", 1}}));
    EXPECT_EQ((*limit)[0].params,
              (std::map<std::string, long long>{{"r", i < 3 ? 2 - i : 0}, {"t", 1}}));
    EXPECT_FALSE(r.has_header("x-ratelimit-limit"));
  }
}

TEST(RateLimitHeaders, TheStrictestRuleForTheCallerIsReported) {
  served s{{.flow = {{.resource = "GET:/hello", .count = 100},
                     {.resource = "GET:/hello", .count = 5, .limit_app = "other"}}},
           rate_limit_header_style::draft03};
  test::http_connection c{s.port()};
  const test::http_response anonymous = c.get("/hello");
  EXPECT_EQ(anonymous.header("x-ratelimit-limit"), "100, 100;w=1");
  EXPECT_EQ(anonymous.header("x-ratelimit-remaining"), "99");
  const test::http_response caller = c.get("/hello", {{"X-Origin", "batch"}});
  EXPECT_EQ(caller.header("x-ratelimit-limit"), "5, 5;w=1");
  EXPECT_EQ(caller.header("x-ratelimit-remaining"), "4");
  EXPECT_TRUE(all_digits(caller.header("x-ratelimit-reset")));
}

TEST(RateLimitHeaders, AThrottledRequestCountsItselfInTheRemainingQuota) {
  // The reject rule's window; the throttling rule holds every request after the first back 1 ms
  // (the manual clock stands still, so each waits a little longer than the one before).
  served s{{.flow = {{.resource = "GET:/hello", .count = 10},
                     {.resource = "GET:/hello",
                      .count = 1000,
                      .behavior = control_behavior::throttling,
                      .max_queueing_time_ms = 500}}},
           rate_limit_header_style::draft03};
  test::http_connection c{s.port()};
  for (int remaining : {9, 8, 7}) {
    const test::http_response r = c.get("/hello");
    ASSERT_EQ(r.status, 200u);
    EXPECT_EQ(r.header("x-ratelimit-limit"), "10, 10;w=1");
    EXPECT_EQ(r.header("x-ratelimit-remaining"), std::to_string(remaining));
  }
}

// An audit: a 429 a nested resource's block made carried `RateLimit: "default";r=47` from the
// outer resource, telling the client it had quota left while refusing it.
TEST(RateLimitHeaders, AHandlersOwn429CarriesNoFieldsButItsPassCounts) {
  for (const auto style : {rate_limit_header_style::ietf, rate_limit_header_style::draft03}) {
    served s{three_per_second, style};
    test::http_connection c{s.port()};
    const test::http_response refused = c.get("/hello?refuse");
    ASSERT_EQ(refused.status, 429u);
    for (const char* f : every_rate_limit_field) EXPECT_FALSE(refused.has_header(f)) << f;
    const test::http_response next = c.get("/hello");
    ASSERT_EQ(next.status, 200u);
    if (style == rate_limit_header_style::ietf) {
      EXPECT_EQ(next.header("ratelimit"), "\"default\";r=1;t=1");  // the refused pass counts
    } else {
      EXPECT_EQ(next.header("x-ratelimit-remaining"), "1");
    }
  }
}

TEST(RateLimitHeaders, NoQpsRuleNoFields) {
  served s{{.flow = {{.resource = "GET:/other", .count = 1}}}, rate_limit_header_style::ietf};
  test::http_connection c{s.port()};
  const test::http_response r = c.get("/hello");
  ASSERT_EQ(r.status, 200u);
  for (const char* f : every_rate_limit_field) EXPECT_FALSE(r.has_header(f)) << f;
}

TEST(RateLimitHeaders, StyleNamesParse) {
  rate_limit_header_style st{};
  EXPECT_TRUE(parse_rate_limit_header_style("ietf", st));
  EXPECT_EQ(st, rate_limit_header_style::ietf);
  EXPECT_TRUE(parse_rate_limit_header_style("draft03", st));
  EXPECT_EQ(st, rate_limit_header_style::draft03);
  EXPECT_TRUE(parse_rate_limit_header_style("off", st));
  EXPECT_EQ(st, rate_limit_header_style::off);
  EXPECT_TRUE(parse_rate_limit_header_style("IETF", st));  // any case, as the rule file reads it
  EXPECT_EQ(st, rate_limit_header_style::ietf);
  EXPECT_TRUE(parse_rate_limit_header_style("Draft03", st));
  EXPECT_EQ(st, rate_limit_header_style::draft03);
  EXPECT_FALSE(parse_rate_limit_header_style("ietf ", st));
  EXPECT_FALSE(parse_rate_limit_header_style("draft", st));
}

}  // namespace
}  // namespace floodgate::beast
