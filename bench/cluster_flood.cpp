// Three instances (engine + Redis adapter each) flood one global clusterMode rule through a real
// Redis: admitted per aligned second vs count, and Redis commands per 1000 admitted requests
// (SPEC §7: <= 20; Envoy's global rate limit sends one per request).
// Run: bench/cluster_flood.sh (starts a redis-server), or
//      build/release/bench/floodgate_cluster_flood redis://127.0.0.1:6379 COUNT SECONDS [OFFERED]
// OFFERED (default 0: each thread enters as fast as it can) paces the fleet's tries at OFFERED x
// COUNT per second, evenly spread over the three instances: a flood just over the limit, where
// instances must share the window rather than each find it full.
#include <floodgate/cluster/redis_cluster.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  using namespace floodgate;
  if (argc < 4) {
    std::fprintf(stderr, "usage: floodgate_cluster_flood REDIS_URL COUNT SECONDS [OFFERED]\n");
    return 2;
  }
  const std::string url = argv[1];
  const double count = std::atof(argv[2]);
  const int seconds = std::atoi(argv[3]);
  const double offered = argc > 4 ? std::atof(argv[4]) : 0.0;
  rule_set rules;
  rules.cluster = cluster_config{.redis = {url}, .name_space = "bench"};
  rules.flow.push_back({.resource = "GET:/hello", .count = count, .cluster_mode = true});

  struct instance {
    engine eng;
    std::unique_ptr<cluster::redis_cluster> adapter;
  };
  std::vector<std::unique_ptr<instance>> fleet;
  for (int i = 0; i < 3; ++i) {
    auto in = std::make_unique<instance>();
    (void)in->eng.load_rules(rules);
    in->adapter = std::make_unique<cluster::redis_cluster>(
        in->eng, cluster::redis_cluster_options{.instance_id = "bench" + std::to_string(i)});
    fleet.push_back(std::move(in));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::uint64_t commands_before = 0;
  for (auto& in : fleet) commands_before += in->adapter->status().commands;

  std::atomic<bool> stop{false};
  std::mutex m;
  std::map<std::int64_t, std::uint64_t> per_second;
  std::uint64_t tries = 0;
  std::vector<std::thread> threads;
  for (auto& in : fleet) {
    threads.emplace_back([&, e = &in->eng] {
      context ctx{*e, "ctx"};
      const resource_handle hello = e->resource("GET:/hello");
      std::map<std::int64_t, std::uint64_t> mine;
      std::uint64_t n = 0;
      // Paced: one try every `gap`, on a schedule (a late try does not push the next ones back).
      const auto gap = std::chrono::nanoseconds(
          offered > 0 ? static_cast<std::int64_t>(3e9 / (offered * count)) : 0);
      auto next = std::chrono::steady_clock::now();
      while (!stop.load(std::memory_order_relaxed)) {
        if (offered > 0) {
          next += gap;
          std::this_thread::sleep_until(next);
        }
        ++n;
        if (e->enter(ctx, hello)) {
          const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
          ++mine[ms / 1000];
        }
      }
      std::lock_guard lock(m);
      tries += n;
      for (auto [s, k] : mine) per_second[s] += k;
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  std::uint64_t commands = 0;
  for (auto& in : fleet) commands += in->adapter->status().commands;
  commands -= commands_before;

  std::uint64_t admitted = 0, full_seconds = 0, full_admitted = 0, worst = ~0ull, most = 0;
  const auto first = per_second.begin()->first, last = per_second.rbegin()->first;
  std::printf("count %.0f, 3 instances, %d s, %llu tries (%s)\nper aligned second:", count,
              seconds, static_cast<unsigned long long>(tries),
              offered > 0 ? (std::to_string(offered) + "x count offered").c_str() : "flood");
  for (auto [s, k] : per_second) {
    std::printf(" %llu", static_cast<unsigned long long>(k));
    admitted += k;
    most = std::max(most, k);
    if (s != first && s != last) {
      ++full_seconds;
      full_admitted += k;
      worst = std::min(worst, k);
    }
  }
  std::printf("\nfull seconds: mean %.1f%% of count, lowest %.1f%%, highest second %llu (limit %.0f)\n",
              100.0 * static_cast<double>(full_admitted) / static_cast<double>(full_seconds) / count,
              100.0 * static_cast<double>(worst) / count, static_cast<unsigned long long>(most),
              count);
  std::printf("Redis commands: %llu for %llu admitted = %.2f per 1000 admitted\n",
              static_cast<unsigned long long>(commands), static_cast<unsigned long long>(admitted),
              1000.0 * static_cast<double>(commands) / static_cast<double>(admitted));
  return 0;
}
