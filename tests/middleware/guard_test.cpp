// The middleware in process: every blocked-response row, throttling, errors, exits on all paths.
#include <floodgate/beast/guard.hpp>
#include <floodgate/chain/clock.hpp>
#include <floodgate/system/manual_system_status.hpp>

#include "node/node_registry.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>

namespace floodgate::beast {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using request = http::request<http::string_body>;
using response = http::response<http::string_body>;

struct parsed {
  unsigned status = 0;
  std::map<std::string, std::string> headers;
  std::string body;
  std::string header(const std::string& name) const {
    const auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

/// Serializes a message_generator and parses it back, as a client would see it (one that sent
/// HEAD expects no body, whatever Content-Length says).
parsed parse(http::message_generator& gen, bool head = false) {
  std::string wire;
  boost::system::error_code ec;
  while (!gen.is_done()) {
    std::size_t n = 0;
    for (const auto& b : gen.prepare(ec)) {
      wire.append(static_cast<const char*>(b.data()), b.size());
      n += b.size();
    }
    EXPECT_FALSE(ec);
    gen.consume(n);
  }
  http::response_parser<http::string_body> p;
  p.eager(true);
  p.skip(head);
  asio::const_buffer buf{wire.data(), wire.size()};
  while (!p.is_done() && buf.size() > 0) {
    buf += p.put(buf, ec);
    if (ec) break;
  }
  EXPECT_TRUE(p.is_done()) << wire;
  EXPECT_EQ(buf.size(), 0u) << "bytes after the answer: " << wire;
  parsed out;
  out.status = p.get().result_int();
  for (const auto& f : p.get()) out.headers[std::string(f.name_string())] = std::string(f.value());
  out.body = p.get().body();
  return out;
}

request get(std::string target,
            std::initializer_list<std::pair<const char*, const char*>> hs = {}) {
  request req{http::verb::get, target, 11};
  for (const auto& [k, v] : hs) req.set(k, v);
  return req;
}

/// Runs one guarded call to completion on a fresh io_context.
template <class Guarded, class Body, class Fields>
parsed call(Guarded& g, http::request<Body, Fields> req, request_info info = {}) {
  const bool head = req.method() == http::verb::head;
  asio::io_context io;
  std::optional<http::message_generator> out;
  std::exception_ptr failure;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { out.emplace(co_await g(std::move(req), info)); },
      [&](std::exception_ptr e) { failure = e; });
  io.run();
  if (failure) std::rethrow_exception(failure);
  return parse(*out, head);
}

response ok_response(const request& req, unsigned status = 200, std::string body = "ok") {
  response res{static_cast<http::status>(status), req.version()};
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

/// A sync handler that counts its calls and answers with a configurable status.
struct counting_handler {
  std::shared_ptr<int> calls = std::make_shared<int>(0);
  unsigned status = 200;
  response operator()(request&& req, request_scope&) const {
    ++*calls;
    return ok_response(req, status);
  }
};

class GuardTest : public ::testing::Test {
 protected:
  GuardTest() : status_(std::make_shared<manual_system_status>()) {
    routes_.add("GET", "/hello");
    routes_.add("GET", "/work");
    routes_.add("GET", "/status/{code}");
    options_.routes = &routes_;
    options_.origin_header = "X-Origin";
  }

  engine& make_engine(const rule_set& rules, bool manual_time = true) {
    engine_options o;
    o.time = manual_time ? &clock_ : nullptr;
    o.system_status = status_;
    engine_ = std::make_unique<engine>(o);
    const auto loaded = engine_->load_rules(rules);
    EXPECT_TRUE(loaded.ok());
    return *engine_;
  }

  const node::resource_totals& totals(std::string_view resource) const {
    const auto* n = engine_->nodes().find_resource(resource);
    EXPECT_NE(n, nullptr) << resource;
    return n->totals();
  }
  std::int64_t concurrency(std::string_view resource) const {
    const auto* n = engine_->nodes().find_resource(resource);
    return n != nullptr ? n->concurrency() : 0;
  }

  manual_clock clock_;
  std::shared_ptr<manual_system_status> status_;
  std::unique_ptr<engine> engine_;
  route_table routes_;
  guard_options options_;
};

TEST_F(GuardTest, PassedRequestCallsTheHandlerAndCountsItsCompletion) {
  auto& eng = make_engine({});
  counting_handler h;
  auto g = guard(eng, options_, h);
  const parsed r = call(g, get("/hello"));
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.body, "ok");
  EXPECT_EQ(*h.calls, 1);
  EXPECT_EQ(totals("GET:/hello").passed.load(), 1u);
  EXPECT_EQ(totals("GET:/hello").completed(), 1u);
  EXPECT_EQ(concurrency("GET:/hello"), 0);
}

TEST_F(GuardTest, AwaitableHandlersAreAwaited) {
  auto& eng = make_engine({});
  auto g = guard(eng, options_, [](request req, request_scope& scope) -> asio::awaitable<response> {
    asio::steady_timer t{co_await asio::this_coro::executor, 1ms};
    co_await t.async_wait(asio::use_awaitable);
    co_return ok_response(req, 200, std::string(scope.resource()));
  });
  const parsed r = call(g, get("/work"));
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.body, "GET:/work");
  EXPECT_EQ(totals("GET:/work").completed(), 1u);
}

TEST_F(GuardTest, HandlersMayTakeOnlyTheRequest) {
  auto& eng = make_engine({});
  auto g = guard(eng, options_, [](request&& req) { return ok_response(req, 201); });
  EXPECT_EQ(call(g, get("/hello")).status, 201u);
}

TEST_F(GuardTest, DurationsAreTimedBelowAMillisecond) {
  auto& eng = make_engine({});
  clock_.set_ms(1000);
  auto g = guard(eng, options_, [this](request&& req) {
    clock_.advance_ns(300'000);  // 0.3 ms: invisible to the engine's millisecond clock
    return ok_response(req, 200);
  });
  EXPECT_EQ(call(g, get("/hello")).status, 200u);
  EXPECT_EQ(totals("GET:/hello").duration_sum_ns.load(), 300'000u);
  EXPECT_EQ(totals("GET:/hello").duration[0].load(), 1u);
}

/// An allocator distinct from std::allocator: the middleware is generic over Fields.
template <class T>
struct other_allocator {
  using value_type = T;
  other_allocator() = default;
  template <class U>
  other_allocator(const other_allocator<U>&) noexcept {}  // NOLINT
  T* allocate(std::size_t n) { return std::allocator<T>{}.allocate(n); }
  void deallocate(T* p, std::size_t n) { std::allocator<T>{}.deallocate(p, n); }
  friend bool operator==(const other_allocator&, const other_allocator&) { return true; }
  friend bool operator!=(const other_allocator&, const other_allocator&) { return false; }
};

TEST_F(GuardTest, WorksWithAnyBodyAndFieldsType) {
  using fields = http::basic_fields<other_allocator<char>>;
  auto& eng = make_engine({.flow = {{.resource = "GET:/hello", .count = 1}}});
  auto g = guard(eng, options_, [](http::request<http::empty_body, fields>&& req) {
    http::response<http::string_body, fields> res{http::status::ok, req.version()};
    res.body() = "custom";
    res.prepare_payload();
    return res;
  });
  http::request<http::empty_body, fields> req{http::verb::get, "/hello", 11};
  EXPECT_EQ(call(g, std::move(req)).body, "custom");
  http::request<http::empty_body, fields> again{http::verb::get, "/hello", 11};
  EXPECT_EQ(call(g, std::move(again)).status, 429u);
}

// A blocked HEAD gets the block's status and headers without a body (a keep-alive client would
// read the body as its next response).
TEST_F(GuardTest, ABlockedHeadRequestHasNoBody) {
  auto& eng = make_engine({.flow = {{.resource = "<unmatched>", .count = 0}}});
  auto g = guard(eng, options_, counting_handler{});
  request head{http::verb::head, "/hello", 11};
  const parsed r = call(g, std::move(head));
  EXPECT_EQ(r.status, 429u);
  EXPECT_EQ(r.header("Retry-After"), "1");
  EXPECT_EQ(r.body, "");
  // The length of the answer a GET gets (RFC 9110, section 8.6: no other length may be sent).
  const parsed as_get = call(g, get("/nowhere"));  // also <unmatched>: the same answer
  ASSERT_EQ(as_get.status, 429u);
  EXPECT_EQ(r.header("Content-Length"), std::to_string(as_get.body.size()));
  EXPECT_NE(r.header("Content-Length"), "0");
}

TEST_F(GuardTest, FlowBlockAnswers429WithRetryAfterAndJson) {
  auto& eng = make_engine({.flow = {{.resource = "GET:/hello", .count = 1}}});
  counting_handler h;
  auto g = guard(eng, options_, h);
  EXPECT_EQ(call(g, get("/hello")).status, 200u);
  const parsed r = call(g, get("/hello"));
  EXPECT_EQ(r.status, 429u);
  EXPECT_EQ(r.header("X-Floodgate-Blocked"), "flow");
  EXPECT_EQ(r.header("Retry-After"), "1");
  EXPECT_EQ(r.header("Content-Type"), "application/json");
  EXPECT_EQ(r.body, R"({"blocked":"flow","resource":"GET:/hello"})");
  EXPECT_EQ(*h.calls, 1);  // the blocked request never reached the handler
  EXPECT_EQ(totals("GET:/hello").blocked[0].load(), 1u);
}

TEST_F(GuardTest, ParamFlowByHeaderLimitsEachValueAndIgnoresRequestsWithout) {
  param_flow_rule rule{.resource = "GET:/hello",
                       .param = param_selector{param_source::header, "X-User"},
                       .count = 1};
  auto& eng = make_engine({.param_flow = {rule}});
  counting_handler h;
  auto g = guard(eng, options_, h);
  EXPECT_EQ(call(g, get("/hello", {{"X-User", "alice"}})).status, 200u);
  const parsed r = call(g, get("/hello", {{"X-User", "alice"}}));
  EXPECT_EQ(r.status, 429u);
  EXPECT_EQ(r.header("X-Floodgate-Blocked"), "param_flow");
  EXPECT_GE(std::stoi(r.header("Retry-After")), 1);
  EXPECT_EQ(r.body, R"({"blocked":"param_flow","resource":"GET:/hello"})");
  EXPECT_EQ(call(g, get("/hello", {{"X-User", "bob"}})).status, 200u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(call(g, get("/hello")).status, 200u);
  EXPECT_EQ(call(g, get("/hello", {{"X-User", ""}})).status, 200u);
}

TEST_F(GuardTest, ParamFlowByQueryDecodesTheValue) {
  param_flow_rule rule{
      .resource = "GET:/hello", .param = param_selector{param_source::query, "user"}, .count = 1};
  auto& eng = make_engine({.param_flow = {rule}});
  auto g = guard(eng, options_, counting_handler{});
  EXPECT_EQ(call(g, get("/hello?user=a%20b")).status, 200u);
  EXPECT_EQ(call(g, get("/hello?x=1&user=a+b")).status, 429u);
  EXPECT_EQ(call(g, get("/hello?user=c")).status, 200u);
  EXPECT_EQ(call(g, get("/hello?other=a")).status, 200u);
}

// An audit: a path parameter was taken raw, so `/status/2%300` was another value than
// `/status/200` and a per-value limit was sidestepped by encoding a character.
TEST_F(GuardTest, ParamFlowByPathDecodesTheValue) {
  param_flow_rule rule{.resource = "GET:/status/{code}",
                       .param = param_selector{param_source::path, "code"},
                       .count = 1};
  auto& eng = make_engine({.param_flow = {rule}});
  auto g = guard(eng, options_, counting_handler{});
  EXPECT_EQ(call(g, get("/status/200")).status, 200u);
  EXPECT_EQ(call(g, get("/status/2%300")).status, 429u);
  EXPECT_EQ(call(g, get("/status/%32%30%30")).status, 429u);
  EXPECT_EQ(call(g, get("/status/201")).status, 200u);
}

TEST_F(GuardTest, ParamFlowByClientIpBelievesOnlyTrustedProxies) {
  param_flow_rule rule{
      .resource = "GET:/hello", .param = param_selector{param_source::client_ip, ""}, .count = 1};
  auto& eng = make_engine({.param_flow = {rule}});
  options_.trusted_proxies.push_back(*ip_network::parse("10.0.0.0/8"));
  auto g = guard(eng, options_, counting_handler{});
  const request_info proxy{.peer = boost::asio::ip::make_address("10.0.0.1")};
  EXPECT_EQ(call(g, get("/hello", {{"X-Forwarded-For", "1.1.1.1"}}), proxy).status, 200u);
  EXPECT_EQ(call(g, get("/hello", {{"X-Forwarded-For", "2.2.2.2"}}), proxy).status, 200u);
  EXPECT_EQ(call(g, get("/hello", {{"X-Forwarded-For", "1.1.1.1"}}), proxy).status, 429u);
  // From an untrusted peer the header is ignored: the peer is the client.
  const request_info direct{.peer = boost::asio::ip::make_address("3.3.3.3")};
  EXPECT_EQ(call(g, get("/hello", {{"X-Forwarded-For", "4.4.4.4"}}), direct).status, 200u);
  EXPECT_EQ(call(g, get("/hello", {{"X-Forwarded-For", "5.5.5.5"}}), direct).status, 429u);
}

TEST_F(GuardTest, ParamFlowByOrigin) {
  param_flow_rule rule{
      .resource = "GET:/hello", .param = param_selector{param_source::origin, ""}, .count = 1};
  auto& eng = make_engine({.param_flow = {rule}});
  auto g = guard(eng, options_, counting_handler{});
  EXPECT_EQ(call(g, get("/hello", {{"X-Origin", "svc"}})).status, 200u);
  EXPECT_EQ(call(g, get("/hello", {{"X-Origin", "svc"}})).status, 429u);
  EXPECT_EQ(call(g, get("/hello")).status, 200u);
  EXPECT_EQ(call(g, get("/hello")).status, 200u);
}

TEST_F(GuardTest, OpenBreakerAnswers503WithRetryAfterUntilTheProbe) {
  degrade_rule rule{.resource = "GET:/status/{code}",
                    .grade = degrade_grade::error_count,
                    .count = 1,
                    .min_request_amount = 1,
                    .stat_interval_ms = 10'000,
                    .time_window_sec = 5};
  auto& eng = make_engine({.degrade = {rule}});
  counting_handler h{.status = 500};
  auto g = guard(eng, options_, h);
  parsed r;
  for (int i = 0; i < 10 && r.status != 503; ++i) r = call(g, get("/status/500"));
  ASSERT_EQ(r.status, 503u);
  EXPECT_EQ(r.header("X-Floodgate-Blocked"), "degrade");
  EXPECT_EQ(r.header("Retry-After"), "5");
  EXPECT_EQ(r.body, R"({"blocked":"degrade","resource":"GET:/status/{code}"})");
  clock_.advance_ms(2'100);
  EXPECT_EQ(call(g, get("/status/500")).header("Retry-After"), "3");
}

TEST_F(GuardTest, SystemBlockAnswers503WithRetryAfterOne) {
  auto& eng = make_engine({.system = {{.qps = 1}}});
  auto g = guard(eng, options_, counting_handler{});
  parsed r;
  for (int i = 0; i < 5 && r.status != 503; ++i) r = call(g, get("/hello"));
  ASSERT_EQ(r.status, 503u);
  EXPECT_EQ(r.header("X-Floodgate-Blocked"), "system");
  EXPECT_EQ(r.header("Retry-After"), "1");
  EXPECT_EQ(r.body, R"({"blocked":"system","resource":"GET:/hello"})");
}

TEST_F(GuardTest, AuthorityBlockAnswers403WithoutRetryAfter) {
  auto& eng = make_engine(
      {.authority = {
           {.resource = "GET:/hello", .strategy = authority_strategy::white, .limit_app = "ops"}}});
  auto g = guard(eng, options_, counting_handler{});
  EXPECT_EQ(call(g, get("/hello", {{"X-Origin", "ops"}})).status, 200u);
  const parsed r = call(g, get("/hello", {{"X-Origin", "intruder"}}));
  EXPECT_EQ(r.status, 403u);
  EXPECT_EQ(r.header("X-Floodgate-Blocked"), "authority");
  EXPECT_FALSE(r.headers.count("Retry-After"));
  EXPECT_EQ(r.body, R"({"blocked":"authority","resource":"GET:/hello"})");
  EXPECT_EQ(call(g, get("/hello")).status, 200u);  // no origin: passes, as in Sentinel
}

TEST_F(GuardTest, ServerErrorsAreTracedAsErrors) {
  auto& eng = make_engine({});
  auto g = guard(eng, options_, counting_handler{.status = 503});
  EXPECT_EQ(call(g, get("/hello")).status, 503u);
  EXPECT_EQ(totals("GET:/hello").errors.load(), 1u);
  auto ok = guard(eng, options_, counting_handler{.status = 404});
  EXPECT_EQ(call(ok, get("/hello")).status, 404u);
  EXPECT_EQ(totals("GET:/hello").errors.load(), 1u);
}

TEST_F(GuardTest, ErrorPredicateIsConfigurable) {
  auto& eng = make_engine({});
  options_.is_error = [](unsigned s) noexcept { return s >= 400; };
  auto g = guard(eng, options_, counting_handler{.status = 404});
  EXPECT_EQ(call(g, get("/hello")).status, 404u);
  EXPECT_EQ(totals("GET:/hello").errors.load(), 1u);
}

TEST_F(GuardTest, ThrownExceptionIsAnswered500AndTraced) {
  auto& eng = make_engine({});
  auto g = guard(eng, options_, [](request&&) -> response { throw std::runtime_error("boom"); });
  const parsed r = call(g, get("/hello"));
  EXPECT_EQ(r.status, 500u);
  EXPECT_EQ(r.header("Content-Type"), "application/json");
  EXPECT_EQ(totals("GET:/hello").errors.load(), 1u);
  EXPECT_EQ(totals("GET:/hello").completed(), 1u);
  EXPECT_EQ(concurrency("GET:/hello"), 0);
}

// A server that begins to drain while a request is in flight closes its connection after the
// answer: every answer says so (the handler's, the guard's block and its 500), so a keep-alive
// client does not send its next request onto a closing connection.
TEST_F(GuardTest, AnswersMadeWhileTheServerDrainsCloseTheirConnection) {
  auto& eng = make_engine({.flow = {{.resource = "<unmatched>", .count = 0}}});
  std::atomic<bool> draining{false};
  options_.draining = &draining;
  auto g = guard(eng, options_, [&](request&& req) -> response {
    draining = req.target() != "/hello?stay";  // the server begins to drain meanwhile
    if (req.target() == "/hello?throw") throw std::runtime_error("boom");
    return ok_response(req);
  });
  const parsed stays = call(g, get("/hello?stay"));
  EXPECT_EQ(stays.status, 200u);
  EXPECT_EQ(stays.header("Connection"), "");  // HTTP/1.1: keep-alive unless told otherwise
  const parsed ok = call(g, get("/hello"));
  EXPECT_EQ(ok.status, 200u);
  EXPECT_EQ(ok.header("Connection"), "close");
  const parsed failed = call(g, get("/hello?throw"));
  EXPECT_EQ(failed.status, 500u);
  EXPECT_EQ(failed.header("Connection"), "close");
  const parsed blocked = call(g, get("/nowhere"));  // draining is still set
  EXPECT_EQ(blocked.status, 429u);
  EXPECT_EQ(blocked.header("Connection"), "close");
  draining = false;
  EXPECT_EQ(call(g, get("/nowhere")).header("Connection"), "");
}

TEST_F(GuardTest, AHeadRequestWhoseHandlerThrowsIsAnswered500WithoutABody) {
  auto& eng = make_engine({});
  auto g = guard(eng, options_, [](request&&) -> response { throw std::runtime_error("boom"); });
  const parsed r = call(g, request{http::verb::head, "/hello", 11});
  EXPECT_EQ(r.status, 500u);
  EXPECT_EQ(r.body, "");
  EXPECT_EQ(r.header("Content-Length"), std::to_string(call(g, get("/hello")).body.size()));
}

TEST_F(GuardTest, ThrottledRequestWaitsOnATimerWhileTheThreadServesOthers) {
  flow_rule rule{.resource = "GET:/hello",
                 .count = 10,  // one every 100 ms
                 .behavior = control_behavior::throttling,
                 .max_queueing_time_ms = 2'000};
  auto& eng = make_engine({.flow = {rule}});
  manual_timer_queue timers{clock_};
  options_.timers = &timers;
  auto g = guard(eng, options_, counting_handler{});
  asio::io_context io;  // one thread for everything below
  std::vector<std::int64_t> done_ms;  // manual time at which each throttled request answered
  for (int i = 0; i < 3; ++i) {
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          auto msg = co_await g(get("/hello"), {});
          EXPECT_EQ(parse(msg).status, 200u);
          done_ms.push_back(clock_.now_ms());
        },
        asio::detached);
  }
  bool other_done = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto msg = co_await g(get("/work"), {});
        EXPECT_EQ(parse(msg).status, 200u);
        other_done = true;
      },
      asio::detached);
  io.poll();
  EXPECT_TRUE(other_done);  // served while two requests are held back
  ASSERT_EQ(done_ms.size(), 1u);
  // The held-back requests are neither passed nor in flight until their wait ends (Sentinel
  // counts a throttled request after its flow slot's sleep).
  EXPECT_EQ(concurrency("GET:/hello"), 0);
  EXPECT_EQ(totals("GET:/hello").passed.load(), 1u);
  for (int step = 0; step < 2; ++step) {
    clock_.advance_ms(99);
    timers.run_due();
    io.poll();
    EXPECT_EQ(done_ms.size(), static_cast<std::size_t>(step + 1)) << "a wait ended early";
    clock_.advance_ms(1);
    timers.run_due();
    io.poll();
    EXPECT_EQ(done_ms.size(), static_cast<std::size_t>(step + 2));
  }
  io.run();
  ASSERT_EQ(done_ms.size(), 3u);
  EXPECT_EQ(totals("GET:/hello").passed.load(), 3u);
  EXPECT_EQ(done_ms[1] - done_ms[0], 100);  // spaced 1000 / count ms apart
  EXPECT_EQ(done_ms[2] - done_ms[1], 100);
  EXPECT_EQ(concurrency("GET:/hello"), 0);
}

// A QPS rule next to a throttling rule decides when the wait ends (as Sentinel's FlowSlot does
// after its sleep): of ten requests queued 100 ms apart, the five that fit the second run, the
// rest are answered 429 when their turn comes, and the handler never runs for them.
TEST_F(GuardTest, AThrottledRequestIsCheckedByTheQpsRuleWhenItsWaitEnds) {
  flow_rule queue{.resource = "GET:/hello",
                  .count = 10,
                  .behavior = control_behavior::throttling,
                  .max_queueing_time_ms = 2'000};
  flow_rule per_second{.resource = "GET:/hello", .count = 5};
  auto& eng = make_engine({.flow = {queue, per_second}});
  manual_timer_queue timers{clock_};
  options_.timers = &timers;
  const counting_handler handler;
  auto g = guard(eng, options_, handler);
  asio::io_context io;
  std::vector<unsigned> statuses;
  std::vector<std::string> reasons;
  for (int i = 0; i < 10; ++i) {
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          auto msg = co_await g(get("/hello"), {});
          const auto r = parse(msg);
          statuses.push_back(r.status);
          reasons.push_back(std::string(r.header("X-Floodgate-Blocked")));
        },
        asio::detached);
  }
  io.poll();
  for (int step = 0; step < 9; ++step) {
    clock_.advance_ms(100);
    timers.run_due();
    io.poll();
  }
  io.run();
  ASSERT_EQ(statuses.size(), 10u);
  for (std::size_t i = 0; i < statuses.size(); ++i) {
    EXPECT_EQ(statuses[i], i < 5 ? 200u : 429u) << i;
    EXPECT_EQ(reasons[i], i < 5 ? "" : "flow") << i;
  }
  EXPECT_EQ(*handler.calls, 5);
  EXPECT_EQ(totals("GET:/hello").passed.load(), 5u);
  EXPECT_EQ(concurrency("GET:/hello"), 0);
}

TEST_F(GuardTest, ThrottledRequestWaitsOnARealTimerByDefault) {
  // 250 ms apart: a poll that a loaded machine stretches past the spacing would find the second
  // request due (at 50 ms apart, a sanitizer build on two busy cores could).
  flow_rule rule{.resource = "GET:/hello",
                 .count = 4,
                 .behavior = control_behavior::throttling,
                 .max_queueing_time_ms = 2'000};
  auto& eng = make_engine({.flow = {rule}}, /*manual_time=*/false);
  auto g = guard(eng, options_, counting_handler{});
  asio::io_context io;
  int answered = 0;
  for (int i = 0; i < 3; ++i) {
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          auto msg = co_await g(get("/hello"), {});
          EXPECT_EQ(parse(msg).status, 200u);
          ++answered;
        },
        asio::detached);
  }
  io.poll();
  EXPECT_EQ(answered, 1);  // two are held back on the Asio timer
  io.run();
  EXPECT_EQ(answered, 3);
  EXPECT_EQ(concurrency("GET:/hello"), 0);
}

TEST_F(GuardTest, ConcurrencyLimitHoldsWhileHandlersAreInFlight) {
  auto& eng = make_engine(
      {.flow = {{.resource = "GET:/work", .grade = flow_grade::concurrency, .count = 2}}});
  asio::io_context io;
  asio::steady_timer release{io, std::chrono::steady_clock::time_point::max()};
  auto g = guard(eng, options_, [&](request&& req, request_scope&) -> asio::awaitable<response> {
    boost::system::error_code ec;
    co_await release.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    co_return ok_response(req);
  });
  std::vector<unsigned> statuses;
  for (int i = 0; i < 6; ++i) {
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          auto msg = co_await g(get("/work"), {});
          statuses.push_back(parse(msg).status);
        },
        asio::detached);
  }
  io.poll();
  EXPECT_EQ(statuses, std::vector<unsigned>(4, 429u));  // two handlers hold the only slots
  EXPECT_EQ(concurrency("GET:/work"), 2);
  release.cancel();  // the handlers finish
  io.run();
  EXPECT_EQ(std::count(statuses.begin(), statuses.end(), 200u), 2);
  EXPECT_EQ(concurrency("GET:/work"), 0);
}

TEST_F(GuardTest, CancelledRequestExitsItsEntriesOnceWithoutAnError) {
  auto& eng = make_engine({});
  bool started = false;
  auto g =
      guard(eng, options_, [&](request req, request_scope& scope) -> asio::awaitable<response> {
        auto nested = eng.enter(*scope.context(), "backend:work");
        started = true;
        asio::steady_timer t{co_await asio::this_coro::executor, 10s};
        co_await t.async_wait(asio::use_awaitable);
        co_return ok_response(req);
      });
  asio::io_context io;
  asio::cancellation_signal cancel;
  std::exception_ptr failure;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { co_await g(get("/work"), {}); },
      asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e) { failure = e; }));
  while (!started) io.run_one();
  EXPECT_EQ(concurrency("GET:/work"), 1);
  EXPECT_EQ(concurrency("backend:work"), 1);
  cancel.emit(asio::cancellation_type::terminal);
  io.run();
  EXPECT_TRUE(failure);  // the cancellation propagates to the session
  EXPECT_EQ(concurrency("GET:/work"), 0);
  EXPECT_EQ(concurrency("backend:work"), 0);
  EXPECT_EQ(totals("GET:/work").completed(), 1u);
  EXPECT_EQ(totals("GET:/work").errors.load(), 0u);
  EXPECT_EQ(totals("backend:work").completed(), 1u);
}

TEST_F(GuardTest, DestroyedCoroutineFrameExitsItsEntry) {
  auto& eng = make_engine({});
  bool started = false;
  auto g = guard(eng, options_, [&](request req) -> asio::awaitable<response> {
    started = true;
    asio::steady_timer t{co_await asio::this_coro::executor, 10s};
    co_await t.async_wait(asio::use_awaitable);
    co_return ok_response(req);
  });
  {
    asio::io_context io;
    asio::co_spawn(
        io, [&]() -> asio::awaitable<void> { co_await g(get("/work"), {}); }, asio::detached);
    while (!started) io.run_one();
    EXPECT_EQ(concurrency("GET:/work"), 1);
  }  // shutdown: the io_context destroys the suspended frames
  EXPECT_EQ(concurrency("GET:/work"), 0);
  EXPECT_EQ(totals("GET:/work").completed(), 1u);
}

TEST_F(GuardTest, NestedOutboundEntryIsAChildInTheTree) {
  auto& eng = make_engine({});
  auto g = guard(eng, options_, [&](request&& req, request_scope& scope) {
    auto nested = eng.enter(*scope.context(), "backend:work");
    return ok_response(req);
  });
  EXPECT_EQ(call(g, get("/work")).status, 200u);
  const auto* entrance = eng.nodes().find_entrance("http-inbound");
  ASSERT_NE(entrance, nullptr);
  const auto* work = entrance->children().first();
  ASSERT_NE(work, nullptr);
  EXPECT_EQ(work->cluster().name(), "GET:/work");
  const auto* backend = work->children().first();
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->cluster().name(), "backend:work");
}

TEST_F(GuardTest, ResourceComesFromTheRouteTableOrTheApplication) {
  auto& eng = make_engine({});
  auto g = guard(eng, options_, [](request&& req, request_scope& scope) {
    return ok_response(req, 200, std::string(scope.resource()));
  });
  EXPECT_EQ(call(g, get("/status/418?x=1")).body, "GET:/status/{code}");
  EXPECT_EQ(call(g, get("/nope")).body, "<unmatched>");
  EXPECT_EQ(call(g, get("/nothing/here")).body, "<unmatched>");
  EXPECT_EQ(call(g, get("/x/1"), {.route = "/x/{n}"}).body, "GET:/x/{n}");
  EXPECT_EQ(call(g, get("/x/1"), {.resource = "custom"}).body, "custom");
}

TEST_F(GuardTest, OriginIsTheConfiguredHeaderCutToItsMaximumLength) {
  auto& eng = make_engine({});
  options_.max_origin_length = 4;
  auto g = guard(eng, options_, [](request&& req, request_scope& scope) {
    return ok_response(req, 200, std::string(scope.origin()));
  });
  EXPECT_EQ(call(g, get("/hello", {{"X-Origin", "billing"}})).body, "bill");
  EXPECT_EQ(call(g, get("/hello")).body, "");
  const auto* n = eng.nodes().find_resource("GET:/hello");
  ASSERT_NE(n, nullptr);
  ASSERT_NE(n->first_origin(), nullptr);
  EXPECT_EQ(n->first_origin()->origin(), "bill");
}

TEST_F(GuardTest, OriginMayBeTheClientAddress) {
  auto& eng = make_engine({});
  options_.origin = origin_source::client_ip;
  auto g = guard(eng, options_, [](request&& req, request_scope& scope) {
    return ok_response(req, 200, std::string(scope.origin()));
  });
  EXPECT_EQ(call(g, get("/hello"), {.peer = boost::asio::ip::make_address("192.0.2.7")}).body,
            "192.0.2.7");
}

TEST_F(GuardTest, EachRouteCountsUnderItsOwnResourceRequestAfterRequest) {
  auto& eng = make_engine({});
  auto g = guard(eng, options_, counting_handler{});
  const char* targets[] = {"/status/1", "/hello", "/nope", "/work", "/hello", "/status/2", "/x"};
  for (int round = 0; round < 3; ++round) {
    for (const char* t : targets) EXPECT_EQ(call(g, get(t)).status, 200u) << t;
  }
  EXPECT_EQ(totals("GET:/hello").passed.load(), 6u);
  EXPECT_EQ(totals("GET:/work").passed.load(), 3u);
  EXPECT_EQ(totals("GET:/status/{code}").passed.load(), 6u);
  EXPECT_EQ(totals("<unmatched>").passed.load(), 6u);
  EXPECT_EQ(eng.nodes().find_resource("/x"), nullptr);  // never the raw path
}

TEST_F(GuardTest, RoutesNeverRequestedAreNotResources) {
  auto& eng = make_engine({});
  auto g = guard(eng, options_, counting_handler{});
  EXPECT_EQ(call(g, get("/hello")).status, 200u);
  EXPECT_EQ(eng.nodes().find_resource("GET:/work"), nullptr);
  EXPECT_EQ(eng.nodes().find_resource("<unmatched>"), nullptr);
}

TEST_F(GuardTest, RouteAddedAfterTheGuardIsNamedByItsTemplate) {
  auto& eng = make_engine({});
  auto g = guard(eng, options_, [](request&& req, request_scope& scope) {
    return ok_response(req, 200, std::string(scope.resource()));
  });
  routes_.add("GET", "/late/{n}");
  EXPECT_EQ(call(g, get("/late/1")).body, "GET:/late/{n}");
  EXPECT_EQ(call(g, get("/late/2")).body, "GET:/late/{n}");
  EXPECT_EQ(totals("GET:/late/{n}").passed.load(), 2u);
}

TEST_F(GuardTest, CopiedGuardCountsUnderTheSameResources) {
  auto& eng = make_engine({.flow = {{.resource = "GET:/hello", .count = 2}}});
  auto g = guard(eng, options_, counting_handler{});
  EXPECT_EQ(call(g, get("/hello")).status, 200u);
  auto copy = g;
  EXPECT_EQ(call(copy, get("/hello")).status, 200u);
  EXPECT_EQ(call(copy, get("/hello")).status, 429u);
  EXPECT_EQ(call(g, get("/hello")).status, 429u);
  EXPECT_EQ(totals("GET:/hello").passed.load(), 2u);
}

TEST_F(GuardTest, PastTheResourceCapEveryRequestPassesUncheckedAndCountsAsOverflow) {
  engine_options o;
  o.time = &clock_;
  o.limits.max_resources = 1;
  engine_ = std::make_unique<engine>(o);
  ASSERT_TRUE(engine_->load_rules({.flow = {{.resource = "GET:/work", .count = 0}}}).ok());
  auto g = guard(*engine_, options_, counting_handler{});
  EXPECT_EQ(call(g, get("/hello")).status, 200u);  // takes the only resource
  for (int i = 0; i < 3; ++i) EXPECT_EQ(call(g, get("/work")).status, 200u);  // rule not checked
  EXPECT_EQ(engine_->nodes().find_resource("GET:/work"), nullptr);
  EXPECT_EQ(engine_->nodes().overflow().resources.load(), 3u);  // each request, as by name
  EXPECT_EQ(totals("GET:/hello").passed.load(), 1u);
}

TEST_F(GuardTest, PastTheContextCapRequestsPassWithoutCreatingResources) {
  engine_options o;
  o.time = &clock_;
  o.limits.max_contexts = 1;
  engine_ = std::make_unique<engine>(o);
  const context other{*engine_, "other"};  // the only context name
  ASSERT_FALSE(other.is_null());
  auto g = guard(*engine_, options_, counting_handler{});
  EXPECT_EQ(call(g, get("/hello")).status, 200u);
  EXPECT_EQ(call(g, get("/nope")).status, 200u);
  EXPECT_EQ(engine_->nodes().find_resource("GET:/hello"), nullptr);
  EXPECT_EQ(engine_->nodes().find_resource("<unmatched>"), nullptr);
}

TEST_F(GuardTest, OriginHeaderNameIsCaseInsensitiveAndTheFirstValueWins) {
  auto& eng = make_engine({});
  auto g = guard(eng, options_, [](request&& req, request_scope& scope) {
    return ok_response(req, 200, std::string(scope.origin()));
  });
  EXPECT_EQ(call(g, get("/hello", {{"x-origin", "lower"}})).body, "lower");
  EXPECT_EQ(call(g, get("/hello", {{"X-ORIGIN", "upper"}})).body, "upper");
  request twice = get("/hello", {{"X-Other", "o"}});
  twice.insert("X-Origin", "first");
  twice.insert("x-origin", "second");
  EXPECT_EQ(call(g, std::move(twice)).body, "first");
  EXPECT_EQ(call(g, get("/hello", {{"X-Origin-Id", "longer"}, {"X-Origi", "shorter"}})).body, "");
}

TEST_F(GuardTest, ParamFlowHeaderNameIsCaseInsensitive) {
  param_flow_rule rule{.resource = "GET:/hello",
                       .param = param_selector{param_source::header, "X-User"},
                       .count = 1};
  auto& eng = make_engine({.param_flow = {rule}});
  auto g = guard(eng, options_, counting_handler{});
  EXPECT_EQ(call(g, get("/hello", {{"x-user", "alice"}})).status, 200u);
  EXPECT_EQ(call(g, get("/hello", {{"X-USER", "alice"}})).status, 429u);
}

TEST(RetryAfter, IsTheCeilingInSecondsAndAtLeastOne) {
  const auto flow = [](long ms) {
    return retry_after_seconds(
        {.reason = block_reason::flow, .retry_after = std::chrono::milliseconds(ms)});
  };
  EXPECT_EQ(flow(0), 1);
  EXPECT_EQ(flow(1), 1);
  EXPECT_EQ(flow(1000), 1);
  EXPECT_EQ(flow(1001), 2);
  EXPECT_EQ(retry_after_seconds({.reason = block_reason::system, .retry_after = 5s}), 1);
  EXPECT_EQ(retry_after_seconds({.reason = block_reason::authority}), 0);
  EXPECT_EQ(retry_after_seconds({.reason = block_reason::degrade, .retry_after = 4500ms}), 5);
}

TEST(BlockedResponse, EscapesTheResourceName) {
  const auto res = make_blocked_response({.reason = block_reason::flow}, "a\"b\\c", 11, true);
  EXPECT_EQ(res.body(), R"({"blocked":"flow","resource":"a\"b\\c"})");
  EXPECT_TRUE(res.keep_alive());
}

}  // namespace
}  // namespace floodgate::beast
