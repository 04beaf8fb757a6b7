// Rule files: the accepted schema (SPEC §3), Sentinel JSON compatibility and round trips.
#include <floodgate/config/rule_file.hpp>

#include <gtest/gtest.h>

#include <string>

namespace floodgate::config {
namespace {

const std::string data_dir = std::string(FLOODGATE_TEST_DATA_DIR) + "/rules/";

rule_set parse_ok(std::string_view text) {
  parse_result r = parse_rules(text, "test.yaml");
  EXPECT_TRUE(r.ok()) << r.error_text();
  return r.rules.value_or(rule_set{});
}

rule_set read_ok(const std::string& path) {
  parse_result r = read_rule_file(path);
  EXPECT_TRUE(r.ok()) << r.error_text();
  return r.rules.value_or(rule_set{});
}

/// The rules of tests/data/rules/full.yaml, built by hand.
rule_set full_rules() {
  rule_set r;
  r.flow = {
      {.name = "hello-qps", .resource = "GET:/hello", .count = 100},
      {.resource = "GET:/users/{id}",
       .grade = flow_grade::concurrency,
       .count = 8,
       .limit_app = "billing"},
      {.resource = "GET:/work",
       .count = 50,
       .strategy = flow_strategy::relate,
       .ref_resource = "backend:work",
       .behavior = control_behavior::warm_up,
       .warm_up_period_sec = 5},
      {.resource = "backend:work",
       .count = 20,
       .strategy = flow_strategy::chain,
       .ref_resource = "http-inbound",
       .behavior = control_behavior::throttling,
       .max_queueing_time_ms = 250,
       .dry_run = true},
      {.resource = "GET:/status/{code}",
       .count = 0.5,
       .behavior = control_behavior::warm_up_throttling,
       .warm_up_period_sec = 3,
       .max_queueing_time_ms = 100},
  };
  r.degrade = {
      {.name = "work-slow",
       .resource = "GET:/work",
       .count = 200,
       .slow_ratio_threshold = 0.5,
       .time_window_sec = 10},
      {.resource = "GET:/status/{code}",
       .grade = degrade_grade::error_ratio,
       .count = 0.25,
       .min_request_amount = 10,
       .stat_interval_ms = 2000,
       .time_window_sec = 5},
      {.resource = "backend:work",
       .grade = degrade_grade::error_count,
       .count = 3,
       .time_window_sec = 1},
      {.name = "work-adaptive",
       .resource = "backend:work",
       .grade = degrade_grade::adaptive,
       .min_request_amount = 20,
       .stat_interval_ms = 2000,
       .k = 1.5},
      // Grade sre is adaptive; its window defaults to 10 s, k to 2.
      {.resource = "GET:/status/{code}",
       .grade = degrade_grade::adaptive,
       .stat_interval_ms = adaptive_default_stat_interval_ms},
  };
  r.authority = {
      {.name = "admin-ops", .resource = "GET:/admin", .limit_app = "ops,cron"},
      {.resource = "GET:/users/{id}",
       .strategy = authority_strategy::black,
       .limit_app = "scraper"},
  };
  r.system = {{.name = "cpu", .highest_cpu_usage = 0.95}, {.max_thread = 400}};
  r.param_flow = {
      {.name = "per-user",
       .resource = "GET:/hello",
       .param = param_selector{param_source::header, "X-User"},
       .count = 5,
       .burst_count = 2,
       .items = {{"vip", 100}, {"blocked", 0}}},
      {.resource = "GET:/users/{id}",
       .param = param_selector{param_source::client_ip, ""},
       .count = 10,
       .duration_in_sec = 2,
       .behavior = control_behavior::throttling,
       .max_queueing_time_ms = 300},
      {.resource = "lib:call", .param_idx = -1, .grade = flow_grade::concurrency, .count = 3},
  };
  r.hot_keys = {
      {.name = "hot-users",
       .resource = "GET:/users/{id}",
       .param = param_selector{param_source::path, "id"},
       .window_sec = 10,
       .top = 5,
       .threshold = 50},
      {.resource = "lib:call", .param_idx = 0, .threshold = 2.5},
  };
  return r;
}

TEST(RuleFile, ReadsEveryFieldOfEverySection) {
  EXPECT_EQ(read_ok(data_dir + "full.yaml"), full_rules());
}

TEST(RuleFile, SentinelJsonWithNumericCodesLoadsTheSameRulesAsTheYamlSpelling) {
  const rule_set from_json = read_ok(data_dir + "sentinel.json");
  EXPECT_EQ(from_json, read_ok(data_dir + "sentinel_equivalent.yaml"));
  ASSERT_EQ(from_json.flow.size(), 2u);
  EXPECT_EQ(from_json.flow[1].behavior, control_behavior::throttling);
  ASSERT_EQ(from_json.param_flow.size(), 1u);
  EXPECT_EQ(from_json.param_flow[0].items, (std::vector<param_flow_item>{{"vip", 100}}));
}

TEST(RuleFile, SectionMayBeASentinelJsonArrayPastedIntoYaml) {
  const rule_set r = parse_ok(R"(
flow: [{"resource":"abc","limitApp":"default","grade":0,"count":20,"strategy":0,
        "refResource":null,"controlBehavior":0,"warmUpPeriodSec":10,"maxQueueingTimeMs":500,
        "clusterMode":false,"clusterConfig":null}]
degrade:
  - resource: abc
    count: 1
    timeWindow: 3
)");
  ASSERT_EQ(r.flow.size(), 1u);
  EXPECT_EQ(r.flow[0],
            (flow_rule{.resource = "abc", .grade = flow_grade::concurrency, .count = 20}));
  EXPECT_EQ(r.degrade.size(), 1u);
}

TEST(RuleFile, RulesAsSentinelsDashboardPublishesThemPasteUnchanged) {
  // Its FlowRuleEntity / DegradeRuleEntity JSON, as the dashboard's Nacos and Apollo publishers
  // write it: the rule plus whose it is and when it changed (ignored here).
  const rule_set r = parse_ok(R"(
flow: [{"id":3,"app":"checkout","ip":"10.0.0.7","port":8719,"limitApp":"default",
        "resource":"GET:/hello","grade":1,"count":20.0,"strategy":0,"refResource":null,
        "controlBehavior":0,"warmUpPeriodSec":null,"maxQueueingTimeMs":null,"clusterMode":false,
        "clusterConfig":null,"gmtCreate":1732600000000,"gmtModified":1732600000000}]
degrade: [{"id":4,"app":"checkout","ip":"10.0.0.7","port":8719,"resource":"GET:/work",
           "limitApp":"default","count":200.0,"timeWindow":10,"grade":0,"minRequestAmount":5,
           "slowRatioThreshold":0.5,"statIntervalMs":1000,"gmtCreate":1732600000000,
           "gmtModified":null}]
)");
  ASSERT_EQ(r.flow.size(), 1u);
  EXPECT_EQ(r.flow[0], (flow_rule{.resource = "GET:/hello", .count = 20}));
  ASSERT_EQ(r.degrade.size(), 1u);
  EXPECT_EQ(r.degrade[0].time_window_sec, 10);
  const parse_result bad = parse_rules("flow: [{resource: a, count: 1, app: [x]}]\n", "r.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error_text().find("flow[0].app: must be a number or a string (Sentinel dashboard"),
            std::string::npos)
      << bad.error_text();
}

TEST(RuleFile, EnumsAcceptNamesAnyCaseAliasesAndSentinelCodes) {
  const rule_set r = parse_ok(R"(
flow:
  - {resource: a, count: 1, grade: thread}
  - {resource: a, count: 1, grade: 0}
  - {resource: a, count: 1, grade: QPS, controlBehavior: default}
  - {resource: a, count: 1, controlBehavior: rate_limiter}
  - {resource: a, count: 1, controlBehavior: 3}
  - {resource: a, count: 1, controlBehavior: WARM_UP}
  - {resource: a, count: 1, strategy: 2, refResource: ctx}
degrade:
  - {resource: a, count: 1, grade: 2, timeWindow: 1}
authority:
  - {resource: a, strategy: 1, limitApp: x}
)");
  ASSERT_EQ(r.flow.size(), 7u);
  EXPECT_EQ(r.flow[0].grade, flow_grade::concurrency);
  EXPECT_EQ(r.flow[1].grade, flow_grade::concurrency);
  EXPECT_EQ(r.flow[2].grade, flow_grade::qps);
  EXPECT_EQ(r.flow[2].behavior, control_behavior::reject);
  EXPECT_EQ(r.flow[3].behavior, control_behavior::throttling);
  EXPECT_EQ(r.flow[4].behavior, control_behavior::warm_up_throttling);
  EXPECT_EQ(r.flow[5].behavior, control_behavior::warm_up);
  EXPECT_EQ(r.flow[6].strategy, flow_strategy::chain);
  EXPECT_EQ(r.degrade[0].grade, degrade_grade::error_count);
  EXPECT_EQ(r.authority[0].strategy, authority_strategy::black);
}

TEST(RuleFile, NullMeansNotGiven) {
  const rule_set r = parse_ok(
      "flow:\n  - {resource: a, count: 1, limitApp: ~, refResource: null}\n");
  ASSERT_EQ(r.flow.size(), 1u);
  EXPECT_EQ(r.flow[0].limit_app, "default");
  // A section is the exception: `degrade:` alone is where a half-written file stops
  // (RuleFileRejects.LastSectionWithNoValue).
}

TEST(RuleFile, ABlankFlowLimitAppMeansDefaultAsInSentinel) {
  const rule_set r = parse_ok(
      "flow:\n  - {resource: a, count: 1, limitApp: ''}\n  - {resource: b, count: 1, limitApp: '  '}\n");
  ASSERT_EQ(r.flow.size(), 2u);
  EXPECT_EQ(r.flow[0].limit_app, "default");
  EXPECT_EQ(r.flow[1].limit_app, "default");
}

TEST(RuleFile, AnEmptyMappingOrAnEmptySectionSaysNoRules) {
  EXPECT_EQ(read_ok(data_dir + "no_rules.yaml"), rule_set{});
  EXPECT_EQ(read_ok(data_dir + "empty_flow.yaml"), rule_set{});
  EXPECT_EQ(parse_ok("# no rules on purpose\n{}\n"), rule_set{});
}

TEST(RuleFile, TheExampleFileLoads) {
  const rule_set r = read_ok(std::string(FLOODGATE_TEST_DATA_DIR) + "/../../examples/rules.yaml");
  EXPECT_FALSE(r.flow.empty());
  EXPECT_FALSE(r.degrade.empty());
  EXPECT_FALSE(r.authority.empty());
  EXPECT_FALSE(r.system.empty());
  EXPECT_FALSE(r.param_flow.empty());
  EXPECT_FALSE(r.hot_keys.empty());
}

TEST(RuleFile, YamlAndJsonOutputReadBackToEqualRules) {
  rule_set r = full_rules();
  // Strings that YAML would otherwise take for other types or syntax.
  r.flow[0].name = "null";
  r.flow[1].limit_app = "true";
  r.authority[1].limit_app = "123";
  r.authority[0].name = "quote \" backslash \\ newline \n tab \t bell \a é ✓";
  r.param_flow[0].items.push_back({"# not a comment: {x}", 3});
  r.param_flow[0].count = 1.0 / 3;
  r.degrade[1].count = 0.1;
  r.degrade[3].k = 1.0 / 3 + 1;
  for (const std::string& text : {to_yaml(r), to_json(r)}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(parse_ok(text), r);
  }
  EXPECT_EQ(parse_ok(to_yaml(rule_set{})), rule_set{});
  EXPECT_EQ(parse_ok(to_json(rule_set{})), rule_set{});
}

TEST(RuleFile, AClusterSectionThatNamesNoRedisReadsBackAsWritten) {
  // No URL: the process's default endpoint (the demo's --redis).
  const rule_set r{.cluster = cluster_config{.name_space = "checkout"}};
  for (const std::string& text : {to_yaml(r), to_json(r)}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(parse_ok(text), r);
  }
}

// SPEC §11: `rateLimitHeaders: off | draft03 | ietf`, a top-level key of the file (the HTTP
// middleware reads it unless its options fix the fields).
TEST(RuleFile, RateLimitHeadersIsATopLevelKeyThatReadsBackAsWritten) {
  EXPECT_EQ(parse_ok("rateLimitHeaders: ietf\nflow: []\n").rate_limit_headers,
            rate_limit_header_style::ietf);
  EXPECT_EQ(parse_ok("rateLimitHeaders: draft03\n").rate_limit_headers,
            rate_limit_header_style::draft03);
  EXPECT_EQ(parse_ok("rateLimitHeaders: off\n").rate_limit_headers, rate_limit_header_style::off);
  EXPECT_EQ(parse_ok("flow: []\n").rate_limit_headers, std::nullopt);
  for (const auto style : {rate_limit_header_style::off, rate_limit_header_style::draft03,
                           rate_limit_header_style::ietf}) {
    rule_set r = full_rules();
    r.rate_limit_headers = style;
    for (const std::string& text : {to_yaml(r), to_json(r)}) {
      SCOPED_TRACE(text);
      EXPECT_EQ(parse_ok(text), r);
    }
  }
  const parse_result bad = parse_rules("rateLimitHeaders: draft99\n", "rules.yaml");
  EXPECT_EQ(bad.error_text(),
            "rules.yaml:1:19: rateLimitHeaders: unknown value \"draft99\"; expected off | "
            "draft03 | ietf\n");
  EXPECT_EQ(parse_rules("rateLimitHeaders: [ietf]\n", "rules.yaml").errors.size(), 1u);
}

TEST(ClusterConfig, WithoutPasswordHidesOnlyThePassword) {
  EXPECT_EQ(without_password("redis://user:secret@host:6379/2"), "redis://user:***@host:6379/2");
  EXPECT_EQ(without_password("rediss://:p@ss@host?ssl_ca_certs=/ca.pem"),
            "rediss://:***@host?ssl_ca_certs=/ca.pem");
  EXPECT_EQ(without_password("redis://host:6379"), "redis://host:6379");
  EXPECT_EQ(without_password("redis://user:@host"), "redis://user:@host");  // nothing to hide
}

TEST(RuleFile, JsonOutputUsesTheFileSchemaWithEnumNames) {
  rule_set r;
  r.flow = {{.resource = "GET:/hello", .count = 100}};
  const std::string json = to_json(r);
  EXPECT_NE(json.find(R"({"resource": "GET:/hello", "grade": "qps", "count": 100,)"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("degrade": [])"), std::string::npos) << json;
}

TEST(RuleFile, ErrorsPrintAsFileLineColumnPathMessage) {
  const rule_file_error located{"rules.yaml", 7, 12, "flow[1].count", "must be >= 0"};
  EXPECT_EQ(located.to_string(), "rules.yaml:7:12: flow[1].count: must be >= 0");
  const rule_file_error syntax{"rules.yaml", 3, 1, "", "YAML syntax error: x"};
  EXPECT_EQ(syntax.to_string(), "rules.yaml:3:1: (file): YAML syntax error: x");
  const rule_file_error unreadable{"rules.yaml", 1, 1, "", "cannot open: x"};
  EXPECT_EQ(unreadable.to_string(), "rules.yaml:1:1: (file): cannot open: x");
}

TEST(RuleFile, TextFromTheFileCannotForgeAnErrorLineOrEndItsQuotes) {
  // A key holding a newline and a terminal escape, a value holding a quote.
  const parse_result r = parse_rules(
      "flow:\n  - {resource: a, count: 1, \"x\\ntest.yaml:1:1: flow[9].count: fake\\u001b[31m\": 1}\n"
      "  - {resource: a, count: 1, grade: 'q\"p'}\n",
      "test.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error_text(),
            "test.yaml:2:29: flow[0].x\\ntest.yaml:1:1: flow[9].count: fake\\x1b[31m: unknown key "
            "\"x\\ntest.yaml:1:1: flow[9].count: fake\\x1b[31m\"\n"
            "test.yaml:3:36: flow[1].grade: unknown value \"q\\\"p\"; expected qps (1) | "
            "concurrency (0)\n");
  const rule_file_error raw{"a\nb.yaml", 1, 1, "p\x7f", "m\r \xc2\x9b[31m \xe2\x80\xa8 \xc3\xa9"};
  EXPECT_EQ(raw.to_string(), "a\\nb.yaml:1:1: p\\x7f: m\\r \\u009b[31m \\u2028 \xc3\xa9")
      << "C1 controls and line separators escaped; other characters kept";
}

TEST(RuleFile, ReportsEveryErrorOfTheFileInFileOrder) {
  const parse_result r = parse_rules(R"(flow:
  - resource: a
    count: -1
    grade: fast
  - resource: ""
    count: 1
degrade:
  - resource: b
    count: 1
)",
                                     "rules.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error_text(),
            "rules.yaml:3:12: flow[0].count: must be >= 0\n"
            "rules.yaml:4:12: flow[0].grade: unknown value \"fast\"; expected qps (1) | "
            "concurrency (0)\n"
            "rules.yaml:5:15: flow[1].resource: must not be empty\n"
            "rules.yaml:8:5: degrade[0].timeWindow: is required\n");
}

TEST(RuleFile, AliasesCannotMultiplyTheDocumentWithoutBound) {
  // One rule with 1000 items, used 1000 times: a million values from 30 KB of text.
  std::string text = "paramFlow:\n  - &r {resource: r, paramIdx: 0, count: 1, items: [";
  for (int i = 0; i < 1000; ++i) text += "{value: v" + std::to_string(i) + ", count: 1},";
  text += "]}\n";
  for (int i = 0; i < 999; ++i) text += "  - *r\n";
  const parse_result r = parse_rules(text, "bomb.yaml");
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].message.rfind("too many values", 0), 0u) << r.error_text();
}

TEST(RuleFile, AStringMayBeQuotedOrTaggedStr) {
  const rule_set r = parse_ok(
      "flow:\n  - {resource: !!str a, count: 1, limitApp: 'x', grade: !<tag:yaml.org,2002:str> "
      "qps}\n");
  ASSERT_EQ(r.flow.size(), 1u);
  EXPECT_EQ(r.flow[0].resource, "a");
  EXPECT_EQ(r.flow[0].limit_app, "x");
  EXPECT_EQ(r.flow[0].grade, flow_grade::qps);
}

TEST(RuleFile, EveryWayOfWritingAKeyWithoutAValueStillLoads) {
  // A key with a null value, spelled as YAML allows: a `:` must follow each, wherever it is.
  const rule_set r = parse_ok(
      "flow:\n"
      "  - resource: a\n"
      "    count: 1\n"
      "    ? clusterConfig\n"
      "    :\n"
      "    ? \"refResource\"\n"
      "    :\n"
      "    !<tag:yaml.org,2002:str> limitApp:\n"
      "    !!str dryRun: ~\n"
      "    &m maxQueueingTimeMs:\n"
      "    'warmUpPeriodSec' : null\n"
      "    \"controlBehavior\":\r\n"
      "degrade: []");
  ASSERT_EQ(r.flow.size(), 1u);
  EXPECT_EQ(r.flow[0], (flow_rule{.resource = "a", .count = 1}));
  // A key in single quotes with a quote in it: an unknown key, reported as that.
  const parse_result odd = parse_rules("flow: [{resource: a, count: 1, 'it''s': 1}]\n", "r.yaml");
  EXPECT_NE(odd.error_text().find("unknown key \"it's\""), std::string::npos) << odd.error_text();
}

TEST(RuleFile, AFileOfManyTinyValuesIsRefusedBeforeItsTreeIsBuilt) {
  // 2 MB, a million values: as yaml-cpp nodes, hundreds of megabytes. Refused while counting.
  std::string text = "flow: [";
  for (int i = 0; i < 1'000'000; ++i) text += "0,";
  text += "0]\n";
  ASSERT_LE(text.size(), max_rule_file_bytes);
  const parse_result r = parse_rules(text, "dense.yaml");
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.errors.size(), 1u) << r.error_text();
  EXPECT_EQ(r.errors[0].message.rfind("too many values", 0), 0u) << r.error_text();
  EXPECT_EQ(r.errors[0].line, 1);
}

}  // namespace
}  // namespace floodgate::config
