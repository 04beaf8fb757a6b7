// Entry + exit with a clusterMode rule whose lease is spent locally, next to the same local QPS
// rule (SPEC §7: <= 1.3x, zero allocations). The lease is granted in-process, as the Redis
// adapter would, so the figure is the request path alone (no network is ever on it).
// Run: build/release/bench/floodgate_bench --benchmark_filter=Cluster
#include "alloc_counter.hpp"
#include "quantile.hpp"

#include <floodgate/engine/engine.hpp>

#include <benchmark/benchmark.h>

#include <chrono>
#include <limits>
#include <memory>
#include <vector>

namespace floodgate {
namespace {

constexpr double unlimited = 1e12;

/// One engine with the rule, local or clusterMode; a clusterMode rule's lease is granted for an
/// hour, as the Redis adapter would grant it (in-process: no network is on the request path).
struct setup {
  engine eng;
  std::shared_ptr<cluster_lease> lease;
  resource_handle hello;

  explicit setup(bool cluster) {
    rule_set rules;
    flow_rule rule{.resource = "GET:/hello", .count = unlimited};
    if (cluster) {
      rules.cluster = cluster_config{};
      rule.cluster_mode = true;
    }
    rules.flow.push_back(rule);
    (void)eng.load_rules(rules);
    eng.for_each_cluster_rule([&](const flow_rule&, std::int32_t,
                                  const std::shared_ptr<cluster_lease>& l) { lease = l; });
    if (lease) {
      lease->grant(std::numeric_limits<std::uint32_t>::max(), eng.time().now_ms() + 3'600'000);
    }
    hello = eng.resource("GET:/hello");
  }
};

void run(benchmark::State& state, bool cluster) {
  setup s(cluster);
  context ctx{s.eng, "http-inbound", "billing"};
  for (int i = 0; i < 1000; ++i) {
    auto e = s.eng.enter(ctx, s.hello);
  }
  std::uint64_t blocked = 0;
  const auto before = bench::allocations();
  for (auto _ : state) {
    auto e = s.eng.enter(ctx, s.hello);
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

/** The ratio itself, robust to this VM's phases (its speed moves by up to 2x over a second or
    two): short slices of the two cases back to back, in alternating order, 400 pairs; the
    counters are the median and quartiles of the pairs' time ratios (cluster / local). */
void BM_Cluster_PairedRatio(benchmark::State& state) {
  constexpr int slice = 20'000;  // entries per slice, ~1.5 ms
  constexpr int pairs = 400;
  setup local(false), fleet(true);
  context local_ctx{local.eng, "http-inbound", "billing"};
  context fleet_ctx{fleet.eng, "http-inbound", "billing"};
  const auto time_slice = [](setup& s, context& ctx) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < slice; ++i) {
      auto e = s.eng.enter(ctx, s.hello);
      benchmark::DoNotOptimize(e);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::vector<double> ratios;
  for (auto _ : state) {
    time_slice(local, local_ctx);
    time_slice(fleet, fleet_ctx);
    ratios.clear();
    for (int p = 0; p < pairs; ++p) {
      double l = 0, f = 0;
      if (p % 2 == 0) {
        l = time_slice(local, local_ctx);
        f = time_slice(fleet, fleet_ctx);
      } else {
        f = time_slice(fleet, fleet_ctx);
        l = time_slice(local, local_ctx);
      }
      ratios.push_back(f / l);
    }
  }
  state.counters["ratio_p25"] = bench::quantile(ratios, 0.25);
  state.counters["ratio_median"] = bench::quantile(ratios, 0.5);
  state.counters["ratio_p75"] = bench::quantile(ratios, 0.75);
}
BENCHMARK(BM_Cluster_PairedRatio)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace floodgate
