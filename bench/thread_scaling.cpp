// Entry + exit throughput and per-entry latency at any thread count (SPEC §7, issue 17).
//
// One resource with one QPS rule (never reached) and one slow-ratio breaker, entered with an
// origin, production clock. The main thread enters first (as a server's start-up or warm-up
// does), then THREADS threads run entry + exit for SECONDS; every 16th entry + exit of each
// thread is timed on its own for the percentiles. One process per row, so every row starts from
// the same state:
//
//   build/release/bench/floodgate_thread_scaling THREADS [SECONDS]
//
// prints one line: threads, M entry+exit/s in total (wall clock), M entry+exit per CPU-second the
// process used (what the threads cost, whatever else shares the cores), p50 and p99 of one
// entry + exit in ns, and the heap allocations made while the threads ran. bench/thread_scaling.py runs the
// table, with the rows of two binaries alternating.
#include "alloc_counter.hpp"

#include <floodgate/engine/engine.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <latch>
#include <thread>
#include <vector>

#include <sys/resource.h>

namespace {

using steady = std::chrono::steady_clock;

/// CPU seconds the process has used (user + system), all threads.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  const auto sec = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

constexpr std::size_t max_samples = 1 << 20;  // per thread, allocated before the run
constexpr std::uint64_t sample_every = 16;

floodgate::rule_set reference_rules() {
  return {.flow = {{.resource = "GET:/hello", .count = 1e12}},
          .degrade = {{.resource = "GET:/hello",
                       .count = 200,
                       .slow_ratio_threshold = 0.5,
                       .min_request_amount = 5,
                       .stat_interval_ms = 1000,
                       .time_window_sec = 10}}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s THREADS [SECONDS]\n", argv[0]);
    return 2;
  }
  const int threads = std::max(1, std::atoi(argv[1]));
  const double seconds = argc > 2 ? std::atof(argv[2]) : 1.0;

  floodgate::engine eng;
  (void)eng.load_rules(reference_rules());
  const floodgate::entry_options inbound{.type = floodgate::entry_type::inbound};
  {
    // The main thread enters first, across two window boundaries (the first fold allocates the
    // nodes' minute windows: from then on nothing is allocated), then goes idle.
    floodgate::context ctx{eng, "http-inbound", "billing"};
    const std::int64_t first_window = floodgate::default_clock().now_ms() / 500;
    for (int i = 0; i < 100'000 || floodgate::default_clock().now_ms() / 500 <= first_window + 1;
         ++i) {
      auto e = eng.enter(ctx, "GET:/hello", inbound);
    }
  }

  std::vector<std::vector<std::uint32_t>> samples(static_cast<std::size_t>(threads));
  for (auto& s : samples) s.resize(max_samples);
  std::vector<std::size_t> sampled(static_cast<std::size_t>(threads));
  std::vector<std::uint64_t> ops(static_cast<std::size_t>(threads));
  std::atomic<bool> stop{false};
  std::latch ready(threads + 1);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const auto i = static_cast<std::size_t>(t);
      floodgate::context ctx{eng, "http-inbound", "billing"};
      for (int k = 0; k < 1000; ++k) {
        auto e = eng.enter(ctx, "GET:/hello", inbound);
      }
      ready.arrive_and_wait();
      std::uint64_t n = 0;
      std::size_t k = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        for (std::uint64_t j = 0; j < sample_every - 1; ++j) {
          auto e = eng.enter(ctx, "GET:/hello", inbound);
        }
        const auto before = steady::now();
        {
          auto e = eng.enter(ctx, "GET:/hello", inbound);
        }
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now() - before);
        if (k < max_samples) {
          samples[i][k++] = static_cast<std::uint32_t>(std::min<std::int64_t>(ns.count(), 1 << 30));
        }
        n += sample_every;
      }
      ops[i] = n;
      sampled[i] = k;
    });
  }
  ready.arrive_and_wait();
  const auto allocs_before = floodgate::bench::allocations();
  const double cpu_before = cpu_seconds();
  const auto start = steady::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop.store(true);
  for (auto& t : pool) t.join();
  const double elapsed = std::chrono::duration<double>(steady::now() - start).count();
  const double cpu = cpu_seconds() - cpu_before;
  const auto allocs = floodgate::bench::allocations() - allocs_before;

  std::uint64_t total = 0;
  std::vector<std::uint32_t> all;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    total += ops[i];
    all.insert(all.end(), samples[i].begin(),
               samples[i].begin() + static_cast<std::ptrdiff_t>(sampled[i]));
  }
  std::sort(all.begin(), all.end());
  const auto pct = [&](double p) {
    return all.empty() ? 0u : all[static_cast<std::size_t>(p * static_cast<double>(all.size() - 1))];
  };
  std::printf("threads %d  Mops/s %.2f  Mops/cpu-s %.2f  p50_ns %u  p99_ns %u  "
              "allocations %llu in %llu entries\n",
              threads, static_cast<double>(total) / elapsed / 1e6,
              static_cast<double>(total) / cpu / 1e6, pct(0.50), pct(0.99),
              static_cast<unsigned long long>(allocs), static_cast<unsigned long long>(total));
  return 0;
}
