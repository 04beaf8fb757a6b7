// The admin API in process: endpoints, JSON keys and status codes (SPEC §5).
#include <floodgate/beast/admin_api.hpp>
#include <floodgate/beast/metrics_collector.hpp>
#include <floodgate/beast/metrics_handler.hpp>
#include <floodgate/config/rule_file.hpp>
#include <floodgate/config/rule_file_watcher.hpp>
#include <floodgate/chain/clock.hpp>

#include "admin_json.hpp"
#include "support/demo_process.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>

namespace floodgate::beast {
namespace {

namespace json = boost::json;

class AdminApiTest : public ::testing::Test {
 protected:
  AdminApiTest() {
    engine_options o;
    o.time = &clock_;
    engine_ = std::make_unique<engine>(o);
  }

  http::response<http::string_body> get(std::string_view target) const {
    return admin_api{*engine_, options_}.handle(http::verb::get, target, 11, true);
  }
  json::value get_json(std::string_view target) const {
    const auto res = get(target);
    EXPECT_EQ(res.result_int(), 200u) << target;
    EXPECT_EQ(res[http::field::content_type], "application/json");
    return json::parse(res.body());
  }

  manual_clock clock_;
  std::unique_ptr<engine> engine_;
  admin_options options_;
};

TEST_F(AdminApiTest, ResourcesListsEveryClusterNodeWithItsStatistics) {
  context ctx{*engine_, "http-inbound", "billing"};
  { auto e = engine_->enter(ctx, "GET:/hello", {.type = entry_type::inbound}); }
  const json::value v = get_json("/floodgate/resources");
  ASSERT_TRUE(v.is_array());
  ASSERT_EQ(v.as_array().size(), 1u);
  const json::object& o = v.as_array()[0].as_object();
  EXPECT_EQ(o.at("resource").as_string(), "GET:/hello");
  for (const char* key : {"passQps", "blockQps", "successQps", "exceptionQps", "avgRt", "minRt",
                          "concurrency", "totalPass", "totalBlock"}) {
    EXPECT_TRUE(o.contains(key)) << key;
  }
  EXPECT_EQ(o.at("totalPass").to_number<int>(), 1);
  EXPECT_EQ(o.at("concurrency").to_number<int>(), 0);
}

TEST_F(AdminApiTest, TreeNestsChildrenFromTheRoot) {
  context ctx{*engine_, "http-inbound"};
  {
    auto outer = engine_->enter(ctx, "GET:/work", {.type = entry_type::inbound});
    auto inner = engine_->enter(ctx, "backend:work");
  }
  const json::value v = get_json("/floodgate/tree");
  EXPECT_EQ(v.at("resource").as_string(), "machine-root");
  const auto& entrance = v.at("children").as_array().at(0);
  EXPECT_EQ(entrance.at("resource").as_string(), "http-inbound");
  // An entrance has every field a resource node has (its sums over its children).
  for (const char* key : {"passQps", "blockQps", "successQps", "exceptionQps", "avgRt", "minRt",
                          "concurrency", "totalPass", "totalBlock"}) {
    EXPECT_TRUE(entrance.as_object().contains(key)) << key;
  }
  EXPECT_EQ(entrance.at("totalPass").to_number<int>(), 1);
  const auto& work = entrance.at("children").as_array().at(0);
  EXPECT_EQ(work.at("resource").as_string(), "GET:/work");
  EXPECT_EQ(entrance.at("minRt"), work.at("minRt"));  // its only child's
  const auto& backend = work.at("children").as_array().at(0);
  EXPECT_EQ(backend.at("resource").as_string(), "backend:work");
  EXPECT_TRUE(backend.at("children").as_array().empty());
}

TEST_F(AdminApiTest, OriginsListsThePerOriginStatisticsOfOneResource) {
  for (const char* origin : {"billing", "search", "billing"}) {
    context ctx{*engine_, "http-inbound", origin};
    auto e = engine_->enter(ctx, "GET:/users/{id}", {.type = entry_type::inbound});
  }
  const json::value v = get_json("/floodgate/origins?resource=GET%3A%2Fusers%2F%7Bid%7D");
  ASSERT_EQ(v.as_array().size(), 2u);
  EXPECT_EQ(v.as_array()[0].at("origin").as_string(), "billing");
  EXPECT_EQ(v.as_array()[0].at("totalPass").to_number<int>(), 2);
  EXPECT_EQ(v.as_array()[1].at("origin").as_string(), "search");
  EXPECT_TRUE(get_json("/floodgate/origins?resource=unknown").as_array().empty());
  EXPECT_EQ(get("/floodgate/origins").result_int(), 400u);
}

TEST_F(AdminApiTest, CallersBytesThatAreNotUtf8AreReplacedSoTheJsonStaysValid) {
  // An origin is whatever a caller put in a header: here an ill-formed byte, an overlong '/'
  // and a surrogate, around a well-formed "é". JSON text must be UTF-8 (RFC 8259, section 8.1).
  context ctx{*engine_, "http-inbound", "a\xff\xc0\xaf" "b\xed\xa0\x80\xc3\xa9"};
  { auto e = engine_->enter(ctx, "GET:/hello", {.type = entry_type::inbound}); }
  const auto res = get("/floodgate/origins?resource=GET:/hello");
  boost::system::error_code ec;
  const json::value v = json::parse(res.body(), ec);  // Boost.JSON refuses ill-formed UTF-8
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(v.as_array().at(0).at("origin").as_string(),
            "a\uFFFD\uFFFD\uFFFDb\uFFFD\uFFFD\uFFFD\u00e9");
}

TEST_F(AdminApiTest, OriginsPastTheCapAreListedAsTheOverflowNode) {
  engine_options o;
  o.time = &clock_;
  o.limits.max_origin_nodes = 1;
  engine_ = std::make_unique<engine>(o);
  for (const char* origin : {"billing", "late-1", "late-2"}) {
    context ctx{*engine_, "http-inbound", origin};
    auto e = engine_->enter(ctx, "GET:/hello", {.type = entry_type::inbound});
  }
  const json::array v = get_json("/floodgate/origins?resource=GET:/hello").as_array();
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].at("origin").as_string(), "<overflow>");
  EXPECT_TRUE(v[0].at("overflow").as_bool());
  EXPECT_EQ(v[0].at("totalPass").to_number<int>(), 2);
  EXPECT_EQ(v[1].at("origin").as_string(), "billing");
  EXPECT_FALSE(v[1].at("overflow").as_bool());
}

TEST_F(AdminApiTest, RulesAreTheRulesInForceInTheFileSchema) {
  ASSERT_TRUE(engine_->load_rules({.flow = {{.resource = "GET:/hello", .count = 7}}}).ok());
  const json::value v = get_json("/floodgate/rules");
  const auto& flow = v.at("flow").as_array();
  ASSERT_EQ(flow.size(), 1u);
  EXPECT_EQ(flow[0].at("resource").as_string(), "GET:/hello");
  EXPECT_EQ(flow[0].at("count").to_number<double>(), 7.0);
}

TEST_F(AdminApiTest, FractionsAreWrittenInPlainNotation) {
  // Boost.JSON writes every double with an exponent (`1.3333333333333333E0`): valid JSON, but
  // not what a person reading the API with curl expects.
  clock_.advance_ms(1'000'000);
  for (const int rt_ms : {1, 1, 2}) {
    context ctx{*engine_, "http-inbound", "billing"};
    auto e = engine_->enter(ctx, "GET:/slow", {.type = entry_type::inbound});
    clock_.advance_ms(rt_ms);
  }
  for (const char* target : {"/floodgate/resources", "/floodgate/origins?resource=GET:/slow"}) {
    const auto res = get(target);
    EXPECT_NE(res.body().find("\"avgRt\":1.3333333333333333,"), std::string::npos)
        << target << ": " << res.body();
    EXPECT_FALSE(std::regex_search(res.body(), std::regex{"[0-9][Ee]"})) << res.body();
  }
}

TEST(AdminJson, NumbersArePlainAndReadBackAsTheSameValue) {
  json::array values{0.5, 0.0001, 1.0 / 3, -0.25, 1e20, 1e-9, 123456.75};
  values.push_back(std::nan(""));
  values.push_back(12);
  values.push_back(std::uint64_t{18446744073709551615u});
  values.push_back(-0.0);
  values.push_back("a\"b\\c\n");
  values.push_back(json::object{{"k", true}, {"n", nullptr}});
  const std::string text = json_text(values);
  EXPECT_EQ(text,
            "[0.5,0.0001,0.3333333333333333,-0.25,1e+20,1e-09,123456.75,null,12,"
            "18446744073709551615,-0,\"a\\\"b\\\\c\\n\",{\"k\":true,\"n\":null}]");
  const json::value back = json::parse(text);
  for (std::size_t i : {0u, 1u, 2u, 3u, 4u, 5u, 6u}) {
    EXPECT_EQ(back.as_array()[i].to_number<double>(), values[i].as_double()) << i;
  }
  EXPECT_EQ(back.as_array()[11].as_string(), "a\"b\\c\n");
}

TEST_F(AdminApiTest, BreakersShowStateAndNextProbeTime) {
  ASSERT_TRUE(engine_
                  ->load_rules({.degrade = {{.resource = "GET:/a",
                                             .grade = degrade_grade::error_count,
                                             .count = 1,
                                             .min_request_amount = 1,
                                             .time_window_sec = 10}}})
                  .ok());
  json::value v = get_json("/floodgate/breakers");
  ASSERT_EQ(v.as_array().size(), 1u);
  EXPECT_EQ(v.as_array()[0].at("resource").as_string(), "GET:/a");
  EXPECT_EQ(v.as_array()[0].at("rule").as_string(), "degrade[0]");
  EXPECT_EQ(v.as_array()[0].at("state").as_string(), "closed");
  EXPECT_TRUE(v.as_array()[0].at("nextProbeTime").is_null());
  for (int i = 0; i < 3; ++i) {
    context ctx{*engine_, "http-inbound"};
    if (auto e = engine_->enter(ctx, "GET:/a")) e.trace_error();
  }
  // The engine's clock stands still: the probe is timeWindow after the moment of the request.
  const auto unix_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const auto before = unix_ms();
  v = get_json("/floodgate/breakers");
  const auto after = unix_ms();
  EXPECT_EQ(v.as_array()[0].at("state").as_string(), "open");
  const auto probe = v.as_array()[0].at("nextProbeTime").to_number<std::int64_t>();
  EXPECT_GE(probe, before + 10'000);
  EXPECT_LE(probe, after + 10'000);
}

TEST_F(AdminApiTest, AdaptiveBreakersShowAStateTheirDropRatioAndWindow) {
  clock_.advance_ms(1'000'000);  // a bucket boundary of the 10 s window
  ASSERT_TRUE(engine_
                  ->load_rules({.degrade = {{.resource = "backend",
                                             .grade = degrade_grade::adaptive,
                                             .stat_interval_ms = 10'000}}})
                  .ok());
  // No state machine, but the state is one of the three SPEC §5 names: closed while it drops
  // nothing...
  const json::value idle = get_json("/floodgate/breakers");
  ASSERT_EQ(idle.as_array().size(), 1u);
  EXPECT_EQ(idle.as_array()[0].at("state").as_string(), "closed");
  EXPECT_EQ(idle.as_array()[0].at("grade").as_string(), "adaptive");
  EXPECT_EQ(idle.as_array()[0].at("dropRatio").to_number<double>(), 0.0);
  for (int i = 0; i < 20; ++i) {
    context ctx{*engine_, "http-inbound"};
    if (auto e = engine_->enter(ctx, "backend"); e && i < 15) e.trace_error();
  }
  const json::value v = get_json("/floodgate/breakers");
  ASSERT_EQ(v.as_array().size(), 1u);
  const json::object& b = v.as_array()[0].as_object();
  EXPECT_EQ(b.at("resource").as_string(), "backend");
  EXPECT_EQ(b.at("rule").as_string(), "degrade[0]");
  // ... open while it drops a share.
  EXPECT_EQ(b.at("state").as_string(), "open");
  EXPECT_EQ(b.at("grade").as_string(), "adaptive");
  EXPECT_TRUE(b.at("nextProbeTime").is_null());
  EXPECT_EQ(b.at("requests").to_number<std::int64_t>(), 20);
  EXPECT_EQ(b.at("accepts").to_number<std::int64_t>(), 5);
  EXPECT_DOUBLE_EQ(b.at("dropRatio").to_number<double>(), (20.0 - 2 * 5) / 21);
}

TEST_F(AdminApiTest, ReloadReportsTheLastLoadAttempt) {
  test::rules_dir dir{"flow: [{resource: a, count: 1}]\n"};
  boost::asio::io_context io;
  config::rule_file_watcher watcher{io.get_executor(), *engine_, dir.path()};
  ASSERT_TRUE(watcher.start().ok());
  options_.watcher = &watcher;
  const json::value v = get_json("/floodgate/reload");
  EXPECT_EQ(v.at("file").as_string(), dir.path());
  EXPECT_TRUE(v.at("ok").is_bool());
  EXPECT_TRUE(v.at("ok").as_bool());
  EXPECT_TRUE(v.at("error").is_null());
  EXPECT_GT(v.at("time").to_number<std::int64_t>(), 1'600'000'000'000);
  watcher.stop();
}

TEST_F(AdminApiTest, ReloadErrorIsOneLinePerProblemWithoutATrailingNewline) {
  test::rules_dir dir{"flow: [{resource: a, count: -1}, {resource: b, count: -2}]\n"};
  boost::asio::io_context io;
  config::rule_file_watcher watcher{io.get_executor(), *engine_, dir.path()};
  const config::parse_result loaded = watcher.start();
  ASSERT_EQ(loaded.errors.size(), 2u);
  options_.watcher = &watcher;
  const json::value v = get_json("/floodgate/reload");
  EXPECT_FALSE(v.at("ok").as_bool());
  const std::string error(v.at("error").as_string());
  EXPECT_EQ(error, loaded.errors[0].to_string() + "\n" + loaded.errors[1].to_string());
  EXPECT_NE(error.find("flow[1].count"), std::string::npos) << error;
  watcher.stop();
}

TEST_F(AdminApiTest, MetricsAreServedWhenConfigured) {
  EXPECT_EQ(get("/metrics").result_int(), 404u);
  metrics_handler metrics{{std::make_shared<metrics_collector>(*engine_)}};
  options_.metrics = &metrics;
  const auto res = get("/metrics");
  EXPECT_EQ(res.result_int(), 200u);
  EXPECT_EQ(res[http::field::content_type], "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(res.body().find("floodgate_build_info"), std::string::npos);
}

TEST_F(AdminApiTest, UnknownPathsAreJson404AndOtherMethods405) {
  const auto missing = get("/floodgate/nope");
  EXPECT_EQ(missing.result_int(), 404u);
  EXPECT_EQ(missing[http::field::content_type], "application/json");
  EXPECT_TRUE(json::parse(missing.body()).is_object());
  const auto post = admin_api{*engine_}.handle(http::verb::post, "/floodgate/rules", 11, true);
  EXPECT_EQ(post.result_int(), 405u);
  EXPECT_EQ(post[http::field::allow], "GET");
  for (const char* path : {"/index.html", "/floodgate", "/floodgate/", "/floodgate/resources/x",
                           "//", "/floodgate/stream"}) {
    EXPECT_EQ(get(path).result_int(), 404u) << path;  // the stream is the server's to hand over
  }
}

// A response to HEAD has no body: a keep-alive client would read it as its next response.
TEST_F(AdminApiTest, HeadIs405WithoutABody) {
  for (const char* path : {"/floodgate/rules", "/floodgate/nope"}) {
    const auto head = admin_api{*engine_}.handle(http::verb::head, path, 11, true);
    EXPECT_EQ(head.result_int(), 405u) << path;
    EXPECT_EQ(head[http::field::allow], "GET") << path;
    EXPECT_EQ(head.body(), "") << path;
    // A GET would have been answered 200 with another length: none is sent (RFC 9110, 8.6).
    EXPECT_EQ(head.find(http::field::content_length), head.end()) << path;
  }
}

TEST_F(AdminApiTest, RootServesTheSelfContainedDashboardPage) {
  const auto res = get("/");
  EXPECT_EQ(res.result_int(), 200u);
  EXPECT_EQ(res[http::field::content_type], "text/html; charset=utf-8");
  const std::string page = res.body();
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("Chart.js v3"), std::string::npos) << "Chart.js is embedded";
  EXPECT_NE(page.find("/floodgate/stream"), std::string::npos);
  // Nothing loaded from elsewhere: no src attribute, one href (an empty inline icon, so the
  // browser does not ask for /favicon.ico), and a policy that only lets the page's own inline
  // scripts run and only connects back to the admin listener.
  EXPECT_EQ(page.find(" src="), std::string::npos);
  const std::size_t icon = page.find(R"( href="data:,")");
  EXPECT_NE(icon, std::string::npos);
  EXPECT_EQ(page.find(" href=", icon + 1), std::string::npos);
  EXPECT_EQ(page.find(" href="), icon);
  const std::string csp(res["Content-Security-Policy"]);
  EXPECT_EQ(csp.rfind("default-src 'none'; script-src 'sha256-", 0), 0u) << csp;
  EXPECT_NE(csp.find("connect-src 'self'"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe"), std::string::npos) << csp;
  EXPECT_EQ(res["X-Content-Type-Options"], "nosniff");
  // With a query, and for HEAD-less clients only GET.
  EXPECT_EQ(get("/?x=1").result_int(), 200u);
  EXPECT_EQ(admin_api{*engine_}.handle(http::verb::post, "/", 11, true).result_int(), 405u);
}

}  // namespace
}  // namespace floodgate::beast
