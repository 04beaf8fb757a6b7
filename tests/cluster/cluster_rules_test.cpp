// The cluster: section and clusterMode flow rules in rule files (SPEC §3, §10).
#include <floodgate/config/rule_file.hpp>

#include <gtest/gtest.h>

namespace floodgate::config {
namespace {

constexpr std::string_view valid = R"(cluster:
  redis: "redis://:secret@127.0.0.1:6390/2"
  namespace: checkout
  timeoutMs: 30
flow:
  - resource: "GET:/hello"
    count: 100
    clusterMode: true
    clusterConfig:
      thresholdType: avg_local
      fallbackToLocalWhenFail: false
      fallbackCount: 20
)";

std::string errors_of(std::string_view text) { return parse_rules(text, "r.yaml").error_text(); }

TEST(ClusterRules, ReadsTheClusterSectionAndClusterConfig) {
  const auto r = parse_rules(valid, "r.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  ASSERT_TRUE(r.rules->cluster);
  EXPECT_EQ(r.rules->cluster->redis, std::vector<std::string>{"redis://:secret@127.0.0.1:6390/2"});
  EXPECT_EQ(r.rules->cluster->name_space, "checkout");
  EXPECT_EQ(r.rules->cluster->timeout_ms, 30);
  const flow_rule& f = r.rules->flow.at(0);
  EXPECT_TRUE(f.cluster_mode);
  EXPECT_EQ(f.cluster_config.threshold_type, cluster_threshold_type::avg_local);
  EXPECT_FALSE(f.cluster_config.fallback_to_local_when_fail);
  EXPECT_EQ(f.cluster_config.fallback_count, 20);
}

TEST(ClusterRules, NumericThresholdTypesAreSentinelsCodes) {
  const auto r = parse_rules(R"(cluster: {redis: "redis://h"}
flow: [{resource: a, count: 1, clusterMode: true, clusterConfig: {thresholdType: 0}}])",
                             "r.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  EXPECT_EQ(r.rules->flow[0].cluster_config.threshold_type, cluster_threshold_type::avg_local);
}

TEST(ClusterRules, WritesThemBackAsTheyWereRead) {
  const auto r = parse_rules(valid, "r.yaml");
  ASSERT_TRUE(r.ok());
  const auto yaml = parse_rules(to_yaml(*r.rules), "yaml");
  ASSERT_TRUE(yaml.ok()) << yaml.error_text() << to_yaml(*r.rules);
  EXPECT_EQ(*yaml.rules, *r.rules);
  const auto json = parse_rules(to_json(*r.rules), "json");
  ASSERT_TRUE(json.ok()) << json.error_text() << to_json(*r.rules);
  EXPECT_EQ(*json.rules, *r.rules);
}

TEST(ClusterRules, ClusterModeWithoutAClusterSectionIsAnErrorAtTheKey) {
  EXPECT_EQ(errors_of("flow:\n  - resource: a\n    count: 1\n    clusterMode: true\n"),
            "r.yaml:4:18: flow[0].clusterMode: needs a cluster: section (the Redis that holds the "
            "shared windows)\n");
}

TEST(ClusterRules, ClusterModeNeedsQpsAndReject) {
  const std::string e = errors_of(R"(cluster: {redis: "redis://h"}
flow:
  - {resource: a, count: 1, grade: concurrency, clusterMode: true}
  - {resource: b, count: 1, controlBehavior: warm_up, clusterMode: true}
)");
  EXPECT_NE(e.find("flow[0].clusterMode: needs grade qps"), std::string::npos) << e;
  EXPECT_NE(e.find("flow[1].clusterMode: needs controlBehavior reject"), std::string::npos) << e;
}

TEST(ClusterRules, AFallbackCountIsCappedAsACountIs) {
  const std::string e = errors_of(R"(cluster: {redis: "redis://h"}
flow:
  - {resource: a, count: 1, clusterMode: true, clusterConfig: {fallbackCount: 1e300}}
)");
  EXPECT_NE(e.find("flow[0].clusterConfig.fallbackCount: must be at most 1e11"),
            std::string::npos)
      << e;
}

TEST(ClusterRules, UnknownKeysAndBadValuesAreRejected) {
  const std::string e = errors_of(R"(cluster: {redis: "http://h", timeoutMs: 0, pool: 3}
flow:
  - resource: a
    count: 1
    clusterMode: true
    clusterConfig: {thresholdType: fleet, fallbackCount: -1, pool: 7}
)");
  EXPECT_NE(e.find("r.yaml:1:18: cluster.redis: must be a redis://"), std::string::npos) << e;
  EXPECT_NE(e.find("cluster.pool"), std::string::npos) << e;
  EXPECT_NE(e.find("cluster.timeoutMs: must be > 0"), std::string::npos) << e;
  EXPECT_NE(e.find("flow[0].clusterConfig.thresholdType: unknown value \"fleet\""),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("flow[0].clusterConfig.fallbackCount: must be >= 0"), std::string::npos) << e;
  EXPECT_NE(e.find("flow[0].clusterConfig.pool"), std::string::npos) << e;
}

/// A flow rule as Sentinel 1.8's JSON serialises it, with every ClusterFlowConfig field.
std::string sentinel_flow_rule(bool cluster_mode, std::string_view window = "") {
  return std::string(
             R"({"cluster": {"redis": "redis://h"}, "flow": [{"resource": "a", "count": 5,)") +
         R"( "limitApp": "default", "grade": 1, "strategy": 0, "controlBehavior": 0,)" +
         R"( "clusterMode": )" + (cluster_mode ? "true" : "false") +
         R"(, "clusterConfig": {"flowId": 7, "thresholdType": 1, "fallbackToLocalWhenFail": true,)" +
         R"( "strategy": 0, "resourceTimeout": 2000, "resourceTimeoutStrategy": 0,)" +
         R"( "acquireRefuseStrategy": 0, "clientOfflineTime": 2000, "prefetchCntRatio": 0.0,)" +
         std::string(window.empty() ? R"( "sampleCount": 10, "windowIntervalMs": 1000)" : window) +
         "}}]}";
}

TEST(ClusterRules, SentinelsWholeClusterFlowConfigPastesUnchanged) {
  for (const bool cluster_mode : {false, true}) {
    const auto r = parse_rules(sentinel_flow_rule(cluster_mode), "r.json");
    ASSERT_TRUE(r.ok()) << r.error_text();
    const flow_rule& f = r.rules->flow.at(0);
    EXPECT_EQ(f.cluster_mode, cluster_mode);
    if (cluster_mode) {
      EXPECT_EQ(f.cluster_config.threshold_type, cluster_threshold_type::global);
    }
  }
}

TEST(ClusterRules, AClusterRuleCountedInAnotherWindowThanRedisKeepsIsAnError) {
  const std::string other = R"( "sampleCount": 2, "windowIntervalMs": 500)";
  const std::string e = errors_of(sentinel_flow_rule(true, other));
  EXPECT_NE(e.find("flow[0].clusterConfig.sampleCount: must be 10: a clusterMode rule is counted "
                   "on Redis in ten 100 ms buckets"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("flow[0].clusterConfig.windowIntervalMs: must be 1000"), std::string::npos) << e;
  // Without clusterMode the clusterConfig is ignored: any valid window loads.
  EXPECT_TRUE(parse_rules(sentinel_flow_rule(false, other), "r.json").ok());
}

TEST(ClusterRules, SentinelsTokenServerKeysAreCheckedForRange) {
  const std::string e = errors_of(R"(cluster: {redis: "redis://h"}
flow:
  - resource: a
    count: 1
    clusterMode: true
    clusterConfig: {strategy: 1, resourceTimeout: -1, resourceTimeoutStrategy: 2,
                    acquireRefuseStrategy: 3, clientOfflineTime: -5, prefetchCntRatio: 2,
                    sampleCount: 0, windowIntervalMs: fast}
)");
  for (const char* message :
       {"flow[0].clusterConfig.strategy: must be 0 (normal",
        "clusterConfig.resourceTimeout: must be >= 0",
        "clusterConfig.resourceTimeoutStrategy: must be 0 (ignore) or 1",
        "clusterConfig.acquireRefuseStrategy: must be 0, 1 or 2",
        "clusterConfig.clientOfflineTime: must be >= 0",
        "clusterConfig.prefetchCntRatio: must be between 0 and 1",
        "clusterConfig.sampleCount: must be > 0", "clusterConfig.windowIntervalMs: must be"}) {
    EXPECT_NE(e.find(message), std::string::npos) << message << "\n" << e;
  }
}

TEST(ClusterRules, RedissUrlsAreTls) {
  std::string why;
  const auto e = parse_redis_url("rediss://:pw@cache.internal:6380/1", why);
  ASSERT_TRUE(e) << why;
  EXPECT_TRUE(e->tls);
  EXPECT_EQ(e->host, "cache.internal");
  EXPECT_EQ(e->port, 6380);
  EXPECT_EQ(e->password, "pw");
  EXPECT_EQ(e->db, 1);
  EXPECT_FALSE(parse_redis_url("redis://cache.internal", why)->tls);
  EXPECT_TRUE(parse_rules("cluster: {redis: [\"redis://a\", \"rediss://b\"]}\n", "r.yaml").ok());
  EXPECT_NE(errors_of("cluster: {redis: \"redis+tls://b\"}\n")
                .find("cluster.redis: must be a redis://[[user]:password@]host[:port][/db] (or "
                      "rediss://) URL"),
            std::string::npos);
}

TEST(ClusterRules, RedissUrlsNameTheirTlsFilesAsRedisPyDoes) {
  std::string why;
  const auto e = parse_redis_url(
      "rediss://:pw@h:6380/2?ssl_ca_certs=%2Fetc%2Fredis%2Fca.pem&ssl_certfile=/c.pem"
      "&ssl_keyfile=/k%20ey.pem",
      why);
  ASSERT_TRUE(e) << why;
  EXPECT_EQ(e->db, 2);
  EXPECT_EQ(e->port, 6380);
  EXPECT_EQ(e->tls_ca_file, "/etc/redis/ca.pem");
  EXPECT_EQ(e->tls_cert_file, "/c.pem");
  EXPECT_EQ(e->tls_key_file, "/k ey.pem");
  // A password may still hold ? and @ unencoded, as before.
  EXPECT_EQ(parse_redis_url("rediss://:p?a@ss@h?ssl_ca_certs=/a%40b.pem", why)->password, "p?a@ss");
  EXPECT_EQ(parse_redis_url("rediss://:p?a@ss@h?ssl_ca_certs=/a%40b.pem", why)->tls_ca_file,
            "/a@b.pem");
  const std::pair<const char*, const char*> bad[] = {
      {"redis://h?ssl_ca_certs=/ca.pem", "apply to rediss:// only"},
      {"rediss://h?verify=no", "unknown URL parameter \"verify\"; expected ssl_ca_certs"},
      {"rediss://h?ssl_keyfile=/k.pem", "ssl_keyfile needs ssl_certfile"},
      {"rediss://h?ssl_certfile=", "ssl_certfile must name a file"},
      {"rediss://h?ssl_certfile=%2", "ssl_certfile must name a file"},
      {"rediss://h?ssl_ca_certs=/etc/a@b.pem", "an @ in a URL parameter must be percent-encoded"},
      {"rediss://h?ssl_ca_certs=/ca.pem%00.txt", "ssl_ca_certs must name a file"},
  };
  for (const auto& [url, message] : bad) {
    EXPECT_FALSE(parse_redis_url(url, why)) << url;
    EXPECT_NE(why.find(message), std::string::npos) << url << ": " << why;
  }
}

TEST(ClusterRules, RedisUrlCredentialsArePercentDecoded) {
  std::string why;
  const auto e = parse_redis_url("redis://ops%3Aa:p%25w%40rd@h/0", why);
  ASSERT_TRUE(e) << why;
  EXPECT_EQ(e->user, "ops:a");
  EXPECT_EQ(e->password, "p%w@rd");
  EXPECT_EQ(e->host, "h");
  for (const char* url : {"redis://:50%@h", "redis://:p%zzw@h", "redis://u%0:pw@h"}) {
    EXPECT_FALSE(parse_redis_url(url, why)) << url;
    EXPECT_NE(why.find("the credentials are percent-encoded"), std::string::npos)
        << url << ": " << why;
  }
}

TEST(ClusterRules, ParsesBracketedIpv6Hosts) {
  std::string why;
  const auto with_port = parse_redis_url("redis://:pw@[::1]:7000/2", why);
  ASSERT_TRUE(with_port) << why;
  EXPECT_EQ(with_port->host, "::1");
  EXPECT_EQ(with_port->port, 7000);
  EXPECT_EQ(with_port->db, 2);
  const auto bare = parse_redis_url("rediss://[fe80::1]", why);
  ASSERT_TRUE(bare) << why;
  EXPECT_EQ(bare->host, "fe80::1");
  EXPECT_EQ(bare->port, 6379);
  for (const char* url : {"redis://[::1", "redis://[::1]x", "redis://[::1]:", "redis://[]:1"}) {
    EXPECT_FALSE(parse_redis_url(url, why)) << url;
  }
}

TEST(ClusterRules, ParsesRedisUrls) {
  std::string why;
  const auto e = parse_redis_url("redis://app:p@ss@10.0.0.1:7000/3", why);
  ASSERT_TRUE(e) << why;
  EXPECT_EQ(e->host, "10.0.0.1");
  EXPECT_EQ(e->port, 7000);
  EXPECT_EQ(e->user, "app");
  EXPECT_EQ(e->password, "p@ss");
  EXPECT_EQ(e->db, 3);
  EXPECT_FALSE(parse_redis_url("redis://h:99999", why));
  EXPECT_FALSE(parse_redis_url("redis://", why));
}

}  // namespace
}  // namespace floodgate::config
