// Two threads vs one, in short alternating slices of one process: floodgate_paired_slices.
//
// This VM's speed moves in phases of a second or two (another guest on the same physical core,
// `bench/RESULTS.md`): an entry then takes up to twice as long on one thread, and a ratio of a
// one-thread run to a two-thread run taken seconds apart says more about the phase than about the
// code. Here two worker threads stay up for the whole run; each pair of slices runs a case on
// one thread, then on both (or the other way round, alternating), `slice_ms` each, back to back,
// so both halves of a pair fall in the same phase. Per case the output gives the median and the
// quartiles of the pairs' ratios (two-thread throughput / one-thread throughput), and the same
// for `compute`, a control that shares nothing (eight xorshift chains, throughput-bound like an
// entry): its ratio is what the machine gave a second core during the run.
//
//   floodgate_paired_slices [SECONDS_PER_CASE] [SLICE_MS] [CASE...]
//
// Cases: compute, qps-breaker (SPEC §7's case: a QPS rule and a slow-ratio breaker, with an
// origin), slow-ratio, adaptive, param-untracked, param-tracked, param-hotkeys-rule (bench
// hot_keys_bench.cpp's three configurations: each thread enters with 128 values of its own),
// hotkeys-rule-alone (a hotKeys rule without a paramFlow rule) and summary (a hot-key summary's
// hash + record alone, no engine).
// The cases run in turn, a pair of each per round, until every case has had SECONDS_PER_CASE.
#include "alloc_counter.hpp"
#include "bench_rules.hpp"
#include "param/top_value_window.hpp"
#include "param/value_key.hpp"
#include "quantile.hpp"

#include <floodgate/engine/engine.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace floodgate {
namespace {

using clock_type = std::chrono::steady_clock;
using bench::quantile;
using bench::value_texts;
using bench::values_per_thread;
constexpr std::size_t batch = 256;  // operations between two looks at the stop flag

/// One case: how a worker thread (0 or 1) runs `n` operations of it.
struct bench_case {
  std::string name;
  std::function<void(int worker, std::size_t n)> run;
};

/** What one worker writes, 128 bytes apart from the other's (two lines: the adjacent-line
    prefetcher pairs them), as the stacks or coroutine frames of two server threads would be. */
template <class T>
struct alignas(128) own {
  T value{};
};

own<std::uint64_t[8]> compute_chains[2];
void compute(int worker, std::size_t n) {
  std::uint64_t(&chain)[8] = compute_chains[worker].value;
  for (std::size_t i = 0; i < n; ++i) bench::xorshift_rounds(chain);
  std::atomic_signal_fence(std::memory_order_seq_cst);  // keep the work
}

/// A case entering "GET:/hello" with origin "billing" under `rules`.
bench_case hello_case(std::string name, const rule_set& rules) {
  struct state {
    engine eng;
    std::array<own<std::optional<context>>, 2> contexts;
  };
  auto s = std::make_shared<state>();
  (void)s->eng.load_rules(rules);
  for (auto& c : s->contexts) c.value.emplace(s->eng, "http-inbound", "billing");
  return {std::move(name), [s](int worker, std::size_t n) {
            context& ctx = *s->contexts[static_cast<std::size_t>(worker)].value;
            const entry_options inbound{.type = entry_type::inbound};
            for (std::size_t i = 0; i < n; ++i) {
              auto e = s->eng.enter(ctx, "GET:/hello", inbound);
            }
          }};
}

/// A case entering "GET:/users/{id}" with each worker's own 128 values, in turn.
bench_case param_case(std::string name, engine_options options, const rule_set& rules) {
  struct worker_state {
    std::optional<context> ctx;
    std::array<param_value, values_per_thread> values;
    std::size_t next = 0;
  };
  struct state {
    std::unique_ptr<engine> eng;
    std::array<own<worker_state>, 2> workers;
  };
  auto s = std::make_shared<state>();
  s->eng = std::make_unique<engine>(std::move(options));
  (void)s->eng->load_rules(rules);
  for (std::size_t w = 0; w < 2; ++w) {
    worker_state& ws = s->workers[w].value;
    ws.ctx.emplace(*s->eng, "http-inbound", "billing");
    for (std::size_t i = 0; i < values_per_thread; ++i) {
      ws.values[i] = param_value(std::string_view(value_texts()[w * values_per_thread + i]));
    }
  }
  return {std::move(name), [s](int worker, std::size_t n) {
            worker_state& ws = s->workers[static_cast<std::size_t>(worker)].value;
            for (std::size_t k = 0; k < n; ++k, ++ws.next) {
              const std::span<const param_value> args{&ws.values[ws.next % values_per_thread], 1};
              auto e = s->eng->enter(*ws.ctx, "GET:/users/{id}",
                                     {.type = entry_type::inbound, .args = args});
            }
          }};
}

/** A hot-key summary alone (a top: 20 rule's 512 slots a bucket, 500 ms buckets): each worker
    hashes and records its own 128 values with the production clock, as a hotKeys rule does. */
bench_case summary_case() {
  struct state {
    param_detail::top_value_window window{5000, 512};
    param_detail::value_hasher hasher{12345};
    std::array<own<std::size_t>, 2> next;
  };
  auto s = std::make_shared<state>();
  return {"summary", [s](int worker, std::size_t n) {
            const auto w = static_cast<std::size_t>(worker);
            std::size_t& i = s->next[w].value;
            const std::int64_t now_ms = default_clock().now_ms();
            for (std::size_t k = 0; k < n; ++k, ++i) {
              const std::string& text =
                  value_texts()[w * values_per_thread + i % values_per_thread];
              s->window.record(s->hasher(text), text, now_ms);
            }
          }};
}

std::vector<bench_case> all_cases() {
  const param_flow_rule param = bench::param_rule();
  const hot_keys_rule hot = bench::hot_rule();
  std::vector<bench_case> cases;
  cases.push_back({"compute", compute});
  cases.push_back(hello_case("qps-breaker", bench::qps_and_breaker()));
  cases.push_back(hello_case("slow-ratio", {.degrade = {bench::slow_breaker()}}));
  cases.push_back(hello_case("adaptive", {.degrade = {bench::adaptive_breaker()}}));
  cases.push_back(
      param_case("param-untracked", {.track_param_flow_values = false}, {.param_flow = {param}}));
  cases.push_back(
      param_case("param-tracked", {.track_param_flow_values = true}, {.param_flow = {param}}));
  cases.push_back(summary_case());
  cases.push_back(param_case("hotkeys-rule-alone", {}, {.hot_keys = {hot}}));
  cases.push_back(param_case("param-hotkeys-rule", {.track_param_flow_values = false},
                             {.param_flow = {param}, .hot_keys = {hot}}));
  return cases;
}

/** Two worker threads that run a case when told to, and otherwise wait (a futex wait: an idle
    worker takes no CPU from the slice of the other). */
class workers {
 public:
  workers() {
    for (int w = 0; w < 2; ++w) {
      threads_.emplace_back([this, w] { loop(w); });
    }
  }
  ~workers() {
    quit_.store(true);
    go_.fetch_add(1);
    go_.notify_all();
    for (auto& t : threads_) t.join();
  }

  /// Runs `c` on `threads` workers for `slice`; returns operations per second (all workers,
  /// each timed from its own start to its own stop).
  double slice(const bench_case& c, int threads, std::chrono::milliseconds slice) {
    current_ = &c;
    active_ = threads;
    acked_.store(0);
    stop_.store(false);
    go_.fetch_add(1);
    go_.notify_all();
    std::this_thread::sleep_for(slice);
    stop_.store(true);
    while (acked_.load() < 2) {  // both workers, the idle one included, are done with it
    }
    double total = 0;
    for (int w = 0; w < threads; ++w) total += rate_[w];
    return total;
  }

 private:
  void loop(int w) {
    std::uint64_t last = 0;
    for (;;) {
      go_.wait(last);  // the next slice is never posted before both workers acknowledged this one
      last = go_.load();
      if (quit_.load()) return;
      if (w < active_) {
        const auto start = clock_type::now();
        std::uint64_t n = 0;
        while (!stop_.load(std::memory_order_relaxed)) {
          current_->run(w, batch);
          n += batch;
        }
        rate_[w] = static_cast<double>(n) /
                   std::chrono::duration<double>(clock_type::now() - start).count();
      }
      acked_.fetch_add(1);
    }
  }

  std::vector<std::thread> threads_;
  std::atomic<std::uint64_t> go_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> quit_{false};
  std::atomic<int> acked_{0};
  const bench_case* current_ = nullptr;
  int active_ = 0;
  alignas(64) double rate_[2] = {};
};

}  // namespace
}  // namespace floodgate

int main(int argc, char** argv) {
  using namespace floodgate;
  const double seconds = argc > 1 ? std::atof(argv[1]) : 10;
  const auto slice_ms = std::chrono::milliseconds(argc > 2 ? std::atoi(argv[2]) : 25);
  std::vector<bench_case> cases = all_cases();
  if (argc > 3) {
    std::vector<bench_case> chosen;
    for (int i = 3; i < argc; ++i) {
      const auto it = std::find_if(cases.begin(), cases.end(),
                                   [&](const bench_case& c) { return c.name == argv[i]; });
      if (it == cases.end()) {
        std::fprintf(stderr, "unknown case %s\n", argv[i]);
        return 2;
      }
      chosen.push_back(*it);
    }
    if (std::none_of(chosen.begin(), chosen.end(),
                     [](const bench_case& c) { return c.name == "compute"; })) {
      chosen.insert(chosen.begin(), cases.front());  // the control is always measured
    }
    cases = std::move(chosen);
  }

  workers pool;
  // Warm-up, past the first folds of the short windows into the minute windows (which the
  // first fold allocates): nodes, values, each CPU's blocks, the threads' memos.
  const auto warm_until = clock_type::now() + std::chrono::milliseconds(1200);
  while (clock_type::now() < warm_until) {
    for (const auto& c : cases) {
      pool.slice(c, 2, slice_ms);
      pool.slice(c, 1, slice_ms);
    }
  }
  const int pairs = std::max(
      1, static_cast<int>(seconds * 1000.0 / (2.0 * static_cast<double>(slice_ms.count()))));
  std::map<std::string, std::vector<double>> ratios, one_thread_ns;
  for (const auto& c : cases) {  // the figures' storage, so that what is counted is the cases'
    ratios[c.name].reserve(static_cast<std::size_t>(pairs));
    one_thread_ns[c.name].reserve(static_cast<std::size_t>(pairs));
  }
  const auto allocations_before = bench::allocations();
  for (int p = 0; p < pairs; ++p) {
    for (const auto& c : cases) {
      double one = 0, two = 0;
      if (p % 2 == 0) {
        one = pool.slice(c, 1, slice_ms);
        two = pool.slice(c, 2, slice_ms);
      } else {
        two = pool.slice(c, 2, slice_ms);
        one = pool.slice(c, 1, slice_ms);
      }
      ratios[c.name].push_back(two / one);
      one_thread_ns[c.name].push_back(1e9 / one);
    }
  }
  const auto allocations = bench::allocations() - allocations_before;

  std::printf("%d pairs of %lld ms slices per case, alternating order\n", pairs,
              static_cast<long long>(slice_ms.count()));
  std::printf("%-20s %8s %8s %8s %8s   %s\n", "case", "p25", "median", "p75", ">=1.6",
              "1-thread ns (p25 / median / p75)");
  for (const auto& c : cases) {
    const auto& r = ratios[c.name];
    const auto above = std::count_if(r.begin(), r.end(), [](double x) { return x >= 1.6; });
    const auto& t = one_thread_ns[c.name];
    std::printf("%-20s %8.2f %8.2f %8.2f %7.0f%%   %.1f / %.1f / %.1f\n", c.name.c_str(),
                quantile(r, 0.25), quantile(r, 0.5), quantile(r, 0.75),
                100.0 * static_cast<double>(above) / static_cast<double>(r.size()),
                quantile(t, 0.25), quantile(t, 0.5), quantile(t, 0.75));
  }
  std::printf("heap allocations during the slices (all threads): %llu\n",
              static_cast<unsigned long long>(allocations));
  return 0;
}
