// A stalled Redis must not reach request threads (issue 18, acceptance 3): p99 of entry + exit on
// a clusterMode rule for a second with Redis answering, then for two seconds while it is stopped
// (SIGSTOP: every lease request times out and the rule falls back), then after SIGCONT.
// Run: bench/cluster_flood.sh --stall (starts a redis-server), or
//      build/release/bench/floodgate_cluster_stall redis://127.0.0.1:6379 REDIS_PID
#include <floodgate/cluster/redis_cluster.hpp>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

struct phase {
  std::vector<double> ns;
  std::uint64_t passed = 0;
};

/// Enters ~5 000 times a second (a request's pace, not a spin) for `length`.
phase run(floodgate::engine& eng, floodgate::context& ctx, floodgate::resource_handle r,
          std::chrono::milliseconds length) {
  phase p;
  const auto end = steady::now() + length;
  while (steady::now() < end) {
    const auto t0 = steady::now();
    {
      auto e = eng.enter(ctx, r);
      if (e) ++p.passed;
    }
    p.ns.push_back(static_cast<double>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now() - t0).count()));
    std::this_thread::sleep_for(200us);
  }
  return p;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace floodgate;
  if (argc < 3) {
    std::fprintf(stderr, "usage: floodgate_cluster_stall REDIS_URL REDIS_PID\n");
    return 2;
  }
  const pid_t redis_pid = std::atoi(argv[2]);
  rule_set rules;
  rules.cluster = cluster_config{.redis = {argv[1]}, .name_space = "stall", .timeout_ms = 20};
  rules.flow.push_back({.resource = "GET:/hello", .count = 1000, .cluster_mode = true});
  engine eng;
  if (!eng.load_rules(rules)) return 1;
  cluster::redis_cluster adapter{eng};
  std::this_thread::sleep_for(300ms);
  context ctx{eng, "ctx"};
  const resource_handle hello = eng.resource("GET:/hello");

  const phase before = run(eng, ctx, hello, 1000ms);
  kill(redis_pid, SIGSTOP);
  const phase stalled = run(eng, ctx, hello, 2000ms);
  const std::string mode_stalled = adapter.status().rules.at(0).mode == cluster_mode::global
                                       ? "global" : "fallback";
  kill(redis_pid, SIGCONT);
  const phase after = run(eng, ctx, hello, 1000ms);

  std::printf("%-22s %8s %8s %10s %10s %10s\n", "phase", "entries", "passed", "p50 ns",
              "p99 ns", "max ns");
  const auto row = [](const char* name, const phase& p) {
    std::printf("%-22s %8zu %8llu %10.0f %10.0f %10.0f\n", name, p.ns.size(),
                static_cast<unsigned long long>(p.passed), percentile(p.ns, 0.5),
                percentile(p.ns, 0.99), percentile(p.ns, 1.0));
  };
  row("Redis answering", before);
  row("Redis stopped (2 s)", stalled);
  row("Redis resumed", after);
  std::printf("mode while stopped: %s; p99 stalled - p99 before = %.0f ns (budget: 2 ms)\n",
              mode_stalled.c_str(), percentile(stalled.ns, 0.99) - percentile(before.ns, 0.99));
  return 0;
}
