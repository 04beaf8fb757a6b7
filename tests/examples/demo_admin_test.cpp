// The real demo's admin API, /metrics and hot reload.
#include "demo_fixture.hpp"

#include <chrono>
#include <string>
#include <utility>

namespace floodgate::test {
namespace {

using namespace std::chrono_literals;

label_map res(const char* resource, const char* key, const char* value) {
  return {{"resource", resource}, {key, value}};
}

TEST_F(DemoTest, MetricsPassPromtoolAndCountEveryRequestExactly) {
  start(R"(flow: [{resource: "GET:/hello", count: 3}])");
  int passed = 0;
  int blocked = 0;
  http_connection c{demo_->port()};
  for (int i = 0; i < 6; ++i) (c.get("/hello").status == 200 ? passed : blocked) += 1;
  for (int i = 0; i < 2; ++i) EXPECT_EQ(c.get("/status/500").status, 500u);
  EXPECT_EQ(c.get("/status/200").status, 200u);

  const http_response main_port = get("/metrics");
  EXPECT_EQ(main_port.status, 200u);
  EXPECT_EQ(main_port.header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  const std::string m = metrics();
  EXPECT_EQ(sample(m, "floodgate_requests_total", res("GET:/hello", "result", "passed")), passed);
  EXPECT_EQ(sample(m, "floodgate_requests_total", res("GET:/hello", "result", "blocked")), blocked);
  EXPECT_EQ(sample(m, "floodgate_blocked_requests_total", res("GET:/hello", "reason", "flow")),
            blocked);
  EXPECT_EQ(sample(m, "floodgate_completed_requests_total", res("GET:/hello", "outcome", "success")),
            passed);
  EXPECT_EQ(sample(m, "floodgate_request_duration_seconds_count", {{"resource", "GET:/hello"}}),
            passed);
  EXPECT_EQ(sample(m, "floodgate_completed_requests_total",
                   res("GET:/status/{code}", "outcome", "error")),
            2.0);
  EXPECT_EQ(sample(m, "floodgate_completed_requests_total",
                   res("GET:/status/{code}", "outcome", "success")),
            1.0);
  EXPECT_EQ(sample(m, "floodgate_inflight_requests", {{"resource", "GET:/hello"}}), 0.0);
  EXPECT_EQ(sample(m, "floodgate_rules", {{"type", "flow"}}), 1.0);
  EXPECT_EQ(sample(m, "floodgate_rules_reloads_total", {{"result", "success"}}), 1.0);
  EXPECT_EQ(sample(m, "floodgate_rules_last_reload_successful"), 1.0);
  EXPECT_EQ(sample(m, "floodgate_build_info", {{"version", "0.1.0"}}), 1.0);
  EXPECT_EQ(sample(m, "floodgate_requests_total", res("/metrics", "result", "passed")),
            std::nullopt)
      << "/metrics is not guarded";

  for (const std::string* text : {&m, &main_port.body}) {
    const auto checked = promtool_check(*text);
    if (!checked) GTEST_SKIP() << "promtool is not installed";
    EXPECT_TRUE(checked->ok) << checked->output;
    EXPECT_EQ(checked->output, "");
  }
}

TEST_F(DemoTest, FirstScrapeListsEveryMetricOfTheSpecBeforeAnyTraffic) {
  start("{}");  // no rules, so no breakers either
  // SPEC §6, written out here rather than taken from metric_names.hpp.
  const std::pair<const char*, const char*> spec[] = {
      {"floodgate_requests_total", "counter"},
      {"floodgate_blocked_requests_total", "counter"},
      {"floodgate_completed_requests_total", "counter"},
      {"floodgate_request_duration_seconds", "histogram"},
      {"floodgate_inflight_requests", "gauge"},
      {"floodgate_circuit_breaker_state", "gauge"},
      {"floodgate_circuit_breaker_transitions_total", "counter"},
      {"floodgate_rules", "gauge"},
      {"floodgate_rules_reloads_total", "counter"},
      {"floodgate_rules_last_reload_successful", "gauge"},
      {"floodgate_resources", "gauge"},
      {"floodgate_resource_overflow_total", "counter"},
      {"floodgate_system_cpu_usage_ratio", "gauge"},
      {"floodgate_system_load1", "gauge"},
      {"floodgate_build_info", "gauge"},
  };
  const std::string admin_port = metrics();
  const http_response main_port = get("/metrics");
  ASSERT_EQ(main_port.status, 200u);
  for (const std::string* text : {&admin_port, &main_port.body}) {
    for (const auto& [name, type] : spec) {
      EXPECT_NE(text->find("\n# TYPE " + std::string(name) + " " + type + "\n"), std::string::npos)
          << name;
      EXPECT_NE(text->find("# HELP " + std::string(name) + " "), std::string::npos) << name;
    }
    EXPECT_EQ(text->find("\nfloodgate_requests_total"), std::string::npos) << "no series yet";
    EXPECT_EQ(text->find("\nfloodgate_circuit_breaker_state"), std::string::npos) << "no breakers";
    EXPECT_EQ(sample(*text, "floodgate_resources"), 0.0);
    const auto checked = promtool_check(*text);
    if (!checked) GTEST_SKIP() << "promtool is not installed";
    EXPECT_TRUE(checked->ok) << checked->output;
    EXPECT_EQ(checked->output, "");
  }
}

TEST_F(DemoTest, AdminApiAnswersJson) {
  start(R"(flow: [{resource: "GET:/hello", count: 100}]
degrade: [{resource: "GET:/work", count: 1000, timeWindow: 5}])");
  EXPECT_EQ(get("/hello", {{"X-Origin", "billing"}}).status, 200u);

  const auto resources = admin_json("/floodgate/resources").as_array();
  ASSERT_EQ(resources.size(), 1u);
  for (const char* key : {"resource", "passQps", "blockQps", "successQps", "exceptionQps", "avgRt",
                          "minRt", "concurrency", "totalPass", "totalBlock"}) {
    EXPECT_TRUE(resources[0].as_object().contains(key)) << key;
  }
  const auto origins = admin_json("/floodgate/origins?resource=GET:/hello").as_array();
  ASSERT_EQ(origins.size(), 1u);
  EXPECT_EQ(origins[0].at("origin").as_string(), "billing");
  EXPECT_EQ(admin_json("/floodgate/rules").at("flow").as_array()[0].at("count").to_number<int>(),
            100);
  const auto breakers = admin_json("/floodgate/breakers").as_array();
  ASSERT_EQ(breakers.size(), 1u);
  EXPECT_EQ(breakers[0].at("resource").as_string(), "GET:/work");
  EXPECT_EQ(breakers[0].at("rule").as_string(), "degrade[0]");
  EXPECT_EQ(breakers[0].at("state").as_string(), "closed");
  const auto reload = admin_json("/floodgate/reload");
  EXPECT_EQ(reload.at("file").as_string(), rules_->path());
  EXPECT_TRUE(reload.at("ok").as_bool());
  EXPECT_TRUE(reload.at("time").is_number());
  EXPECT_TRUE(reload.at("error").is_null());
  const http_response missing = http_get(demo_->admin_port(), "/floodgate/nothing");
  EXPECT_EQ(missing.status, 404u);
  EXPECT_EQ(missing.header("Content-Type"), "application/json");
}

// The reload's timing (one debounce after the file's event, within 1 s) is asserted on the manual
// clock in RuleFileWatcher.AnEditIsInForceOneDebounceAfterItsEvent; here the real demo, real file
// and real inotify show that a replaced file is enforced, with no wall-clock bound.
TEST_F(DemoTest, HotReloadEnforcesANewLimit) {
  start(R"(flow: [{resource: "GET:/hello", count: 1000}])");
  http_connection c{demo_->port()};
  for (int i = 0; i < 5; ++i) ASSERT_EQ(c.get("/hello").status, 200u);

  rules_->replace(R"(flow: [{resource: "GET:/hello", count: 1}])");
  ASSERT_TRUE(eventually(
      [&] {
        return admin_json("/floodgate/rules").at("flow").as_array()[0].at("count").to_number<int>() ==
               1;
      },
      5s));
  int blocked = 0;
  for (int i = 0; i < 5; ++i) blocked += c.get("/hello").status == 429 ? 1 : 0;
  EXPECT_GE(blocked, 3);
  EXPECT_TRUE(eventually(
      [&] {
        return demo_->err().find("floodgate-demo: rules reloaded from " + rules_->path() + "\n") !=
               std::string::npos;
      },
      5s))
      << "stderr:\n"
      << demo_->err();
}

TEST_F(DemoTest, BrokenRuleFileKeepsTheOldLimitAndReportsTheError) {
  start(R"(flow: [{resource: "GET:/hello", count: 1}])");
  rules_->replace(R"(flow: [{resource: "GET:/hello", count: -5}])");
  boost::json::value reload;
  ASSERT_TRUE(eventually(
      [&] {
        reload = admin_json("/floodgate/reload");
        return !reload.at("ok").as_bool();
      },
      5s));
  const std::string error(reload.at("error").as_string());
  EXPECT_NE(error.find("flow[0].count"), std::string::npos) << error;
  EXPECT_NE(error.find("rules.yaml:"), std::string::npos) << error;
  EXPECT_EQ(error.find_last_not_of(" \t\r\n"), error.size() - 1) << "no trailing newline";
  const std::string m = metrics();
  EXPECT_GE(sample(m, "floodgate_rules_reloads_total", {{"result", "error"}}).value_or(0), 1.0);
  EXPECT_EQ(sample(m, "floodgate_rules_last_reload_successful"), 0.0);
  EXPECT_EQ(admin_json("/floodgate/rules").at("flow").as_array()[0].at("count").to_number<int>(),
            1);
  http_connection c{demo_->port()};
  int blocked = 0;
  for (int i = 0; i < 5; ++i) blocked += c.get("/hello").status == 429 ? 1 : 0;
  EXPECT_GE(blocked, 3) << "the old limit stays in force";
  // The operator who saved the file sees the same error on stderr.
  const std::string prefix =
      "floodgate-demo: rules not reloaded, the last good rules stay in force:\n";
  const std::string expected = prefix + error + "\n";
  EXPECT_TRUE(eventually([&] { return demo_->err().find(expected) != std::string::npos; }, 5s))
      << "stderr:\n"
      << demo_->err();
}

}  // namespace
}  // namespace floodgate::test
