// /metrics with 1000 active resources: render time (budget 20 ms), and the cost of an entry while
// scrapes run on another thread (the request path takes no lock a scrape holds).
#include <floodgate/beast/metrics_collector.hpp>
#include <floodgate/beast/metrics_handler.hpp>
#include <floodgate/engine/engine.hpp>

#include <benchmark/benchmark.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

namespace {

using namespace floodgate;

constexpr int resource_count = 1000;

/// An engine with `resource_count` resources that saw traffic, every tenth with a breaker.
std::unique_ptr<engine> busy_engine() {
  auto eng = std::make_unique<engine>();
  rule_set rules;
  for (int i = 0; i < resource_count; i += 10) {
    rules.degrade.push_back(
        {.resource = "GET:/r/" + std::to_string(i), .count = 100, .time_window_sec = 10});
  }
  if (!eng->load_rules(rules)) std::abort();
  for (int i = 0; i < resource_count; ++i) {
    const std::string origin = "origin-" + std::to_string(i % 7);
    context ctx{*eng, "http-inbound", origin};
    auto e = eng->enter(ctx, "GET:/r/" + std::to_string(i), {.type = entry_type::inbound});
  }
  return eng;
}

void BM_RenderMetrics1000Resources(benchmark::State& state) {
  const auto eng = busy_engine();
  const beast::metrics_handler metrics{{std::make_shared<beast::metrics_collector>(*eng)}};
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string text = metrics.render();
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["resources"] = resource_count;
}
BENCHMARK(BM_RenderMetrics1000Resources)->Unit(benchmark::kMillisecond);

/// Entry + exit on one resource; with range(0) == 1 a thread renders /metrics in a loop meanwhile.
void BM_EntryExitDuringScrapes(benchmark::State& state) {
  const auto eng = busy_engine();
  const beast::metrics_handler metrics{{std::make_shared<beast::metrics_collector>(*eng)}};
  std::atomic<bool> stop{false};
  std::atomic<long> scrapes{0};
  std::thread scraper;
  if (state.range(0) != 0) {
    scraper = std::thread([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        benchmark::DoNotOptimize(metrics.render());
        scrapes.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  context ctx{*eng, "http-inbound", "origin-1"};
  for (auto _ : state) {
    auto e = eng->enter(ctx, "GET:/r/10", {.type = entry_type::inbound});
    benchmark::DoNotOptimize(e.passed());
  }
  stop = true;
  if (scraper.joinable()) scraper.join();
  state.counters["scrapes"] = static_cast<double>(scrapes.load());
}
BENCHMARK(BM_EntryExitDuringScrapes)->Arg(0)->Arg(1);

}  // namespace
