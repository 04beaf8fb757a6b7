// Three real demo processes share one global clusterMode rule through a real redis-server.
#include "cluster/support/pass_counts.hpp"
#include "cluster/support/redis_server.hpp"
#include "support/demo_process.hpp"
#include "support/http_client.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

namespace floodgate::test {
namespace {

using namespace std::chrono_literals;

/// A lease request slower than timeoutMs falls back to fallbackCount per demo, which SPEC §10
/// lets pass more than the count: Redis gets a second, so that a slow round trip of an ASan demo
/// on a loaded machine is not taken for a failing Redis.
std::string cluster_yaml() {
  return R"(cluster: {namespace: demo-test, timeoutMs: 1000}
flow:
  - name: hello-global
    resource: "GET:/hello"
    count: 100
    clusterMode: true
    clusterConfig: {fallbackCount: 7}
)";
}

std::string mode_of(const demo_process& d) {
  const http_response r = http_get(d.admin_port(), "/floodgate/cluster");
  if (r.status != 200) return "";
  const auto v = boost::json::parse(r.body);
  const auto& rules = v.at("rules").as_array();
  return rules.empty() ? "" : std::string(rules[0].at("mode").as_string());
}

TEST(DemoCluster, ThreeDemosFloodedPassAtMostTheGlobalCountInEveryAlignedSecond) {
  if (demo_path().empty()) GTEST_SKIP() << "floodgate-demo was not built";
  std::string why;
  auto redis = cluster::testing::redis_server::start({}, why);
  if (!redis) GTEST_SKIP() << "redis-server unavailable: " << why;
  rules_dir rules{cluster_yaml()};
  std::vector<std::unique_ptr<demo_process>> demos;
  for (int i = 0; i < 3; ++i) {
    demos.push_back(std::make_unique<demo_process>(std::vector<std::string>{
        "--rules", rules.path(), "--redis", redis->url(), "--threads", "1"}));
    ASSERT_TRUE(demos.back()->started());
  }
  for (auto& d : demos) {
    ASSERT_TRUE(eventually([&] { return mode_of(*d) == "global"; }, 5s));
  }
  // 5 s instead of the issue's 10 s to keep CI short; bench/cluster_flood.sh runs longer floods.
  std::mutex m;
  cluster::testing::pass_counts passes;
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (auto& d : demos) {
    clients.emplace_back([&, port = d->port()] {
      http_connection c{port};
      cluster::testing::pass_counts mine;
      // About 1 400 requests a second per demo: 40 times the fleet's count of 100 in all, a
      // flood, but one that leaves the three ASan demos and Redis CPU on a two-core machine (a
      // client looping flat out starves its demo, whose lease then goes unspent).
      auto next = std::chrono::steady_clock::now();
      while (!stop.load()) {
        next += 700us;
        std::this_thread::sleep_until(next);
        // The pass happened between the request's send and its answer.
        const std::int64_t before = cluster::testing::wall_ms();
        const http_response r = c.get("/hello");
        if (r.status == 200) mine.add(before, cluster::testing::wall_ms());
      }
      std::lock_guard lock(m);
      passes.merge(mine);
    });
  }
  std::this_thread::sleep_for(5s);
  stop = true;
  for (auto& t : clients) t.join();
  std::cout << "passes per aligned second:" << passes.text() << '\n';
  const std::int64_t first = passes.first(), last = passes.last();
  ASSERT_GE(last - first + 1, 4);
  EXPECT_EQ(passes.long_entries, 0);
  // At most 100 in every second. Seven processes (three ASan demos, their clients, Redis) on two
  // cores: a demo starved of CPU for part of a second leaves passes of its lease unspent, so a
  // full second is held to >= 80 here and the fleet's use to >= 95 % over the run (the
  // library-level RedisCluster.ThreeInstancesNeverPassMoreThanTheGlobalCountAndUseAtLeast95Percent
  // holds every second to 95).
  EXPECT_TRUE(passes.consistent(100, 80, 1)) << passes.text();
  const auto full_seconds = static_cast<int>(last - first - 1);
  EXPECT_GE(passes.least_within(first + 1, last - 1), 95 * full_seconds) << passes.text();
}

TEST(DemoCluster, RedisKilledMeansFallbackVisibleInTheAdminApiAndMetrics) {
  if (demo_path().empty()) GTEST_SKIP() << "floodgate-demo was not built";
  std::string why;
  auto redis = cluster::testing::redis_server::start({.password = "pw-in-file"}, why);
  if (!redis) GTEST_SKIP() << "redis-server unavailable: " << why;
  std::string yaml = cluster_yaml();
  yaml.replace(yaml.find("{namespace"), 1,
               "{redis: \"redis://:pw-in-file@127.0.0.1:" + std::to_string(redis->port()) + "\", ");
  rules_dir rules{yaml};
  demo_process demo{{"--rules", rules.path(), "--threads", "1"}};
  ASSERT_TRUE(demo.started());
  ASSERT_TRUE(eventually([&] { return mode_of(demo) == "global"; }, 5s));
  // The password stays out of the admin API.
  EXPECT_EQ(http_get(demo.admin_port(), "/floodgate/rules").body.find("pw-in-file"),
            std::string::npos);
  EXPECT_EQ(http_get(demo.admin_port(), "/floodgate/cluster").body.find("pw-in-file"),
            std::string::npos);
  redis->kill();
  ASSERT_TRUE(eventually([&] { return mode_of(demo) == "fallback"; }, 2s));
  // The operator sees it on stderr, once, with the reason.
  EXPECT_TRUE(eventually(
      [&] { return demo.err().find("floodgate-demo: Redis failed (") != std::string::npos; }, 2s))
      << demo.err();
  const std::string metrics = http_get(demo.admin_port(), "/metrics").body;
  EXPECT_NE(metrics.find("floodgate_cluster_mode{resource=\"GET:/hello\",rule=\"hello-global\","
                         "mode=\"fallback\"} 1"),
            std::string::npos)
      << metrics;
  // fallbackCount 7: one instance alone passes at most 7 of a burst in a second.
  http_connection c{demo.port()};
  int passed = 0;
  for (int i = 0; i < 30; ++i) passed += c.get("/hello").status == 200 ? 1 : 0;
  EXPECT_LE(passed, 8);
  EXPECT_GE(passed, 1);
  ASSERT_TRUE(redis->restart());
  EXPECT_TRUE(eventually([&] { return mode_of(demo) == "global"; }, 3s));
  EXPECT_TRUE(eventually(
      [&] {
        return demo.err().find(
                   "floodgate-demo: Redis answers again: clusterMode rules are back "
                   "on their shared limits\n") != std::string::npos;
      },
      2s))
      << demo.err();
  const std::string err = demo.err();
  EXPECT_EQ(err.find("Redis failed ("), err.rfind("Redis failed (")) << "told once:\n" << err;
}

}  // namespace
}  // namespace floodgate::test
