// Flow control on its own: the admission window and each controller, then entry + exit with the
// flow rules entry_bench.cpp does not cover. Run:
//   build/release/bench/floodgate_bench --benchmark_filter='Flow|Admission|Controller'
#include "alloc_counter.hpp"

#include <floodgate/engine/engine.hpp>
#include "flow/admission_window.hpp"
#include "flow/throttling_controller.hpp"
#include "flow/warm_up_controller.hpp"

#include <benchmark/benchmark.h>

namespace floodgate {
namespace {

const flow::window_shape one_second{stat::window_config{}};

// One admission per iteration, the clock moving 1 µs each time: the pass path (count 1e12) or
// the blocked path (count 0). With two threads both book into the same cell.
void BM_AdmissionWindow_Admit(benchmark::State& state) {
  static flow::admission_window window;
  const double count = state.range(0) != 0 ? 1e12 : 0;
  std::int64_t now_ns = 1'000'000'000'000;
  for (auto _ : state) {
    now_ns += 1000;
    benchmark::DoNotOptimize(window.admit(now_ns / 1'000'000, 1, count, one_second));
  }
}
BENCHMARK(BM_AdmissionWindow_Admit)->Arg(1)->Arg(0)->Threads(1)->Threads(2)->UseRealTime();

void BM_WarmUpController_Check(benchmark::State& state) {
  flow::warm_up_controller c{1e9, 10};
  stat::statistic_node node;
  std::int64_t now_ms = 1'000'000;
  std::uint64_t i = 0;
  for (auto _ : state) {
    now_ms += (++i % 1024) == 0 ? 1 : 0;
    flow::flow_booking booking;
    benchmark::DoNotOptimize(c.check({now_ms, now_ms * 1'000'000, 1, false, 500}, node, booking));
  }
}
BENCHMARK(BM_WarmUpController_Check);

void BM_ThrottlingController_Check(benchmark::State& state) {
  flow::throttling_controller c{1e9, 500};  // 1 ns apart: every request passes at once
  std::int64_t now_ns = 1'000'000'000'000;
  for (auto _ : state) {
    now_ns += 10;
    benchmark::DoNotOptimize(c.check({now_ns / 1'000'000, now_ns, 1, false, 500}));
  }
}
BENCHMARK(BM_ThrottlingController_Check);

void run_entries(benchmark::State& state, const flow_rule& rule, std::string_view origin) {
  engine eng;
  rule_set rules;
  rules.flow = {rule};
  (void)eng.load_rules(rules);
  context ctx{eng, "http-inbound", origin};
  for (int i = 0; i < 1000; ++i) {  // warm-up: nodes exist afterwards
    auto e = eng.enter(ctx, rule.resource, {.type = entry_type::inbound});
  }
  std::uint64_t blocked = 0;
  const auto before = bench::allocations();
  for (auto _ : state) {
    auto e = eng.enter(ctx, rule.resource, {.type = entry_type::inbound});
    blocked += e.blocked() ? 1 : 0;
    benchmark::DoNotOptimize(e);
  }
  state.counters["allocs/op"] = benchmark::Counter(
      static_cast<double>(bench::allocations() - before), benchmark::Counter::kAvgIterations);
  state.counters["blocked"] =
      benchmark::Counter(static_cast<double>(blocked), benchmark::Counter::kAvgIterations);
}

void BM_EntryExit_ConcurrencyRule(benchmark::State& state) {
  run_entries(state, {.resource = "GET:/hello", .grade = flow_grade::concurrency, .count = 1e9},
              "billing");
}
BENCHMARK(BM_EntryExit_ConcurrencyRule);

void BM_EntryExit_OtherOriginRule(benchmark::State& state) {
  run_entries(state, {.resource = "GET:/hello", .count = 1e12, .limit_app = "other"}, "billing");
}
BENCHMARK(BM_EntryExit_OtherOriginRule);

void BM_EntryExit_WarmUpThrottling(benchmark::State& state) {
  run_entries(state,
              {.resource = "GET:/hello",
               .count = 1e9,
               .behavior = control_behavior::warm_up_throttling,
               .warm_up_period_sec = 1},
              "billing");
}
BENCHMARK(BM_EntryExit_WarmUpThrottling);

}  // namespace
}  // namespace floodgate
