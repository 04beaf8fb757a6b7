// Entry + exit cost on the request path, with the production clock.
//
// Each benchmark reports `allocs/op` (heap allocations per entry + exit after warm-up) next to
// the time. Run: build/release/bench/floodgate_bench --benchmark_filter=Entry
#include "alloc_counter.hpp"

#include <floodgate/core/engine.hpp>

#include <benchmark/benchmark.h>

#include <memory>

namespace floodgate {
namespace {

const entry_options inbound{.type = entry_type::inbound};

engine& shared_engine(const rule_set& rules) {
  static std::unique_ptr<engine> eng;
  static rule_set loaded;
  if (!eng || !(loaded == rules)) {
    eng = std::make_unique<engine>();
    (void)eng->load_rules(rules);
    loaded = rules;
  }
  return *eng;
}

void run_entries(benchmark::State& state, const rule_set& rules, std::string_view resource,
                 std::string_view origin) {
  engine& eng = shared_engine(rules);
  context ctx{eng, "http-inbound", origin};
  for (int i = 0; i < 1000; ++i) {  // warm-up: nodes exist afterwards
    auto e = eng.enter(ctx, resource, inbound);
  }
  std::uint64_t blocked = 0;
  const auto before = bench::allocations();
  for (auto _ : state) {
    auto e = eng.enter(ctx, resource, inbound);
    blocked += e.blocked() ? 1 : 0;
    benchmark::DoNotOptimize(e);
  }
  const auto allocs = bench::allocations() - before;
  state.counters["allocs/op"] =
      benchmark::Counter(static_cast<double>(allocs), benchmark::Counter::kAvgIterations);
  state.counters["blocked"] =
      benchmark::Counter(static_cast<double>(blocked), benchmark::Counter::kAvgIterations);
}

void BM_EntryExit_NoRules(benchmark::State& state) {
  run_entries(state, {}, "GET:/hello", "billing");
}
BENCHMARK(BM_EntryExit_NoRules)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace
}  // namespace floodgate
