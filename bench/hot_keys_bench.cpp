// Entry + exit with hot-key tracking on one parameter vs the same parameter rule without it.
//
// Each thread enters with its own 128 values of the argument (user ids), in turn, so the
// per-value state of the rules is shared by no two threads. Reports `allocs/op` after warm-up.
// Two more pairs time the per-value structures alone, one and two threads on their own values:
// a paramFlow rule's value table (lookup + token update) and a hot-key summary's record().
// Run: build/release/bench/floodgate_bench --benchmark_filter=HotKeys
#include "alloc_counter.hpp"
#include "bench_rules.hpp"
#include "param/top_value_window.hpp"
#include "param/value_table.hpp"

#include <floodgate/engine/engine.hpp>

#include <benchmark/benchmark.h>

#include <array>
#include <memory>
#include <span>
#include <string>

namespace floodgate {
namespace {

using bench::hot_rule;
using bench::param_rule;
using bench::value_texts;
using bench::values_per_thread;

/// One engine per configuration, shared by the benchmark's threads.
engine& engine_for(int which) {
  static std::array<std::unique_ptr<engine>, 3> engines = [] {
    std::array<std::unique_ptr<engine>, 3> e;
    e[0] = std::make_unique<engine>(engine_options{.track_param_flow_values = false});
    (void)e[0]->load_rules({.param_flow = {param_rule()}});
    e[1] = std::make_unique<engine>(engine_options{.track_param_flow_values = true});
    (void)e[1]->load_rules({.param_flow = {param_rule()}});
    e[2] = std::make_unique<engine>(engine_options{.track_param_flow_values = false});
    (void)e[2]->load_rules({.param_flow = {param_rule()}, .hot_keys = {hot_rule()}});
    return e;
  }();
  return *engines[static_cast<std::size_t>(which)];
}

void run(benchmark::State& state, int which) {
  engine& eng = engine_for(which);
  context ctx{eng, "http-inbound", "billing"};
  const auto& texts = value_texts();
  const std::size_t first = static_cast<std::size_t>(state.thread_index()) * values_per_thread;
  std::array<param_value, values_per_thread> values;
  for (std::size_t i = 0; i < values_per_thread; ++i) {
    values[i] = param_value(std::string_view(texts[first + i]));
  }
  const auto enter = [&](std::size_t i) {
    const std::span<const param_value> args{&values[i % values_per_thread], 1};
    return eng.enter(ctx, "GET:/users/{id}", {.type = entry_type::inbound, .args = args});
  };
  for (std::size_t i = 0; i < 4 * values_per_thread; ++i) {  // warm-up: every value seen
    auto e = enter(i);
  }
  std::size_t i = 0;
  const auto before = bench::allocations();
  for (auto _ : state) {
    auto e = enter(i++);
    benchmark::DoNotOptimize(e);
  }
  state.counters["allocs/op"] = benchmark::Counter(
      static_cast<double>(bench::allocations() - before), benchmark::Counter::kAvgIterations);
}

// The baseline: one paramFlow rule, its values not tracked (engine_options).
void BM_HotKeys_ParamRuleUntracked(benchmark::State& state) { run(state, 0); }
BENCHMARK(BM_HotKeys_ParamRuleUntracked)->Threads(1)->Threads(2)->UseRealTime();

// The same rule with its values tracked (the default): one summary update per entry.
void BM_HotKeys_ParamRuleTracked(benchmark::State& state) { run(state, 1); }
BENCHMARK(BM_HotKeys_ParamRuleTracked)->Threads(1)->Threads(2)->UseRealTime();

// The untracked rule plus a hotKeys rule on the same parameter: the value is read and hashed
// a second time, then counted.
void BM_HotKeys_ParamRuleAndHotKeysRule(benchmark::State& state) { run(state, 2); }
BENCHMARK(BM_HotKeys_ParamRuleAndHotKeysRule)->Threads(1)->Threads(2)->UseRealTime();

// The paramFlow value table alone: each thread looks up its own values and takes a token (a
// compare-and-swap on the value's word), as check_tokens() does. A value whose home way another
// thread's value holds reads that value's line first (value_table.hpp): with nothing else in the
// loop, those few values decide the two-thread figure (bench/RESULTS.md "Hot keys").
void BM_HotKeys_ValueTableUpdate(benchmark::State& state) {
  static param_detail::value_table table(4000);  // a durationInSec: 1 rule's capacity
  static const param_detail::value_hasher hasher(12345);
  std::array<param_detail::value_key, values_per_thread> keys;
  const std::size_t first = static_cast<std::size_t>(state.thread_index()) * values_per_thread;
  for (std::size_t i = 0; i < values_per_thread; ++i) {
    keys[i] = hasher(value_texts()[first + i]);
    bool inserted = false;
    (void)table.find_or_insert(keys[i], std::uint64_t{1} << 62, inserted);
  }
  std::size_t i = 0;
  for (auto _ : state) {
    const auto slot = table.find(keys[i++ % values_per_thread]);
    std::uint64_t word = slot.state->load(std::memory_order_relaxed);
    while (!slot.state->compare_exchange_weak(word, word - 1, std::memory_order_relaxed)) {
    }
  }
}
BENCHMARK(BM_HotKeys_ValueTableUpdate)->Threads(1)->Threads(2)->UseRealTime();

// A hot-key summary alone (512 slots a bucket, as a top: 20 rule's): each thread records its
// own values in one bucket (the time stands still, so no bucket turns over).
void BM_HotKeys_SummaryRecord(benchmark::State& state) {
  static param_detail::top_value_window window(1000, 512);
  static const param_detail::value_hasher hasher(12345);
  std::array<param_detail::value_key, values_per_thread> keys;
  const std::size_t first = static_cast<std::size_t>(state.thread_index()) * values_per_thread;
  for (std::size_t i = 0; i < values_per_thread; ++i) {
    keys[i] = hasher(value_texts()[first + i]);
  }
  std::size_t i = 0;
  for (auto _ : state) {
    const std::size_t k = i++ % values_per_thread;
    window.record(keys[k], value_texts()[first + k], 1000);
  }
  state.counters["skipped"] = static_cast<double>(window.skipped());
}
BENCHMARK(BM_HotKeys_SummaryRecord)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace
}  // namespace floodgate
