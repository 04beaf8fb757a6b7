// Entry + exit with a clusterMode rule whose lease is spent locally, next to the same local QPS
// rule (SPEC §7: <= 1.3x, zero allocations). The lease is granted in-process, as the Redis
// adapter would, so the figure is the request path alone (no network is ever on it).
// Run: build/release/bench/floodgate_bench --benchmark_filter=Cluster
#include "alloc_counter.hpp"

#include <floodgate/engine/engine.hpp>

#include <benchmark/benchmark.h>

#include <limits>
#include <memory>

namespace floodgate {
namespace {

constexpr double unlimited = 1e12;

void run(benchmark::State& state, bool cluster) {
  engine eng;
  rule_set rules;
  flow_rule rule{.resource = "GET:/hello", .count = unlimited};
  if (cluster) {
    rules.cluster = cluster_config{};
    rule.cluster_mode = true;
  }
  rules.flow.push_back(rule);
  (void)eng.load_rules(rules);
  std::shared_ptr<cluster_lease> lease;
  eng.for_each_cluster_rule(
      [&](const flow_rule&, std::int32_t, const std::shared_ptr<cluster_lease>& l) { lease = l; });
  const auto refill = [&] {
    if (lease) lease->grant(std::numeric_limits<std::uint32_t>::max(), eng.time().now_ms() + 3'600'000);
  };
  refill();
  context ctx{eng, "http-inbound", "billing"};
  const resource_handle hello = eng.resource("GET:/hello");
  for (int i = 0; i < 1000; ++i) {
    auto e = eng.enter(ctx, hello);
  }
  std::uint64_t blocked = 0;
  const auto before = bench::allocations();
  for (auto _ : state) {
    auto e = eng.enter(ctx, hello);
    blocked += e.blocked() ? 1 : 0;
    benchmark::DoNotOptimize(e);
  }
  const auto allocs = bench::allocations() - before;
  state.counters["allocs/op"] =
      benchmark::Counter(static_cast<double>(allocs), benchmark::Counter::kAvgIterations);
  state.counters["blocked"] =
      benchmark::Counter(static_cast<double>(blocked), benchmark::Counter::kAvgIterations);
}

void BM_Cluster_EntryExit_LocalQpsRule(benchmark::State& state) { run(state, false); }
void BM_Cluster_EntryExit_ClusterRuleLeaseSpentLocally(benchmark::State& state) {
  run(state, true);
}
BENCHMARK(BM_Cluster_EntryExit_LocalQpsRule);
BENCHMARK(BM_Cluster_EntryExit_ClusterRuleLeaseSpentLocally);
BENCHMARK(BM_Cluster_EntryExit_LocalQpsRule);
BENCHMARK(BM_Cluster_EntryExit_ClusterRuleLeaseSpentLocally);

}  // namespace
}  // namespace floodgate
