// Entry + exit with cold caches: floodgate_cold_entry [PAIRS].
//
// In a server, the engine's lines are rarely in the core's caches when a request arrives: the
// socket, the parser, the handler and the other processes on the core have been through them
// since the last request. A microbenchmark that enters in a loop keeps every line in L1 and
// measures none of that. Here each pair times one context + entry + exit right after walking a
// buffer four times the size of the core's L2 (the engine's lines then come from the shared
// last-level cache, and their pages' TLB entries are gone, as in a busy server), then the same
// again with the lines just used (warm).
// Cold - warm is what the engine's spread over cache lines costs a request; the walk itself is
// not timed.
//
// Cases: `spec` (SPEC §7's: a QPS rule never reached and a slow-ratio breaker, with an origin, by
// resource handle as the middleware enters) and `bare` (the same resource and origin, no rules).
#include "bench_rules.hpp"
#include "quantile.hpp"

#include <floodgate/engine/engine.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;
using floodgate::bench::quantile;

/// Bytes that push the engine's lines out of the core's L2: four times its size.
std::size_t eviction_bytes() {
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return 4 * static_cast<std::size_t>(l2 > 0 ? l2 : 2L << 20);
}

struct timings {
  std::vector<double> cold, warm;
};

timings run(const floodgate::rule_set& rules, int pairs, std::vector<unsigned char>& junk) {
  floodgate::engine eng;
  (void)eng.load_rules(rules);
  const auto resource = eng.resource("GET:/hello");
  const auto entrance = eng.entrance("http-inbound");
  const auto once = [&] {
    const auto t0 = clock_type::now();
    {
      floodgate::context ctx{eng, entrance, "billing"};
      auto e = eng.enter(ctx, resource,
                         {.type = floodgate::entry_type::inbound, .precise_duration = true});
    }
    return std::chrono::duration<double, std::nano>(clock_type::now() - t0).count();
  };
  for (int i = 0; i < 1000; ++i) once();  // the nodes, blocks and windows exist
  timings t;
  std::uint64_t sum = 0;
  for (int i = 0; i < pairs; ++i) {
    for (std::size_t k = 0; k < junk.size(); k += 64) sum += junk[k]++;
    t.cold.push_back(once());
    t.warm.push_back(once());
  }
  if (sum == 1) std::puts("");  // keep the walk
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const int pairs = argc > 1 ? std::atoi(argv[1]) : 2000;
  std::vector<unsigned char> junk(eviction_bytes(), 1);
  std::printf("%d pairs; %zu MiB walked before each cold entry\n", pairs, junk.size() >> 20);
  std::printf("%-6s %22s %22s %10s\n", "case", "cold ns (p25/med/p75)", "warm ns (p25/med/p75)",
              "cold-warm");
  const floodgate::rule_set spec = floodgate::bench::qps_and_breaker();
  for (const auto& [name, rules] :
       {std::pair{"spec", spec}, std::pair{"bare", floodgate::rule_set{}}}) {
    const timings t = run(rules, pairs, junk);
    const double cold = quantile(t.cold, 0.5), warm = quantile(t.warm, 0.5);
    std::printf("%-6s %6.0f/%6.0f/%6.0f %8.0f/%6.0f/%6.0f %10.0f\n", name, quantile(t.cold, 0.25),
                cold, quantile(t.cold, 0.75), quantile(t.warm, 0.25), warm, quantile(t.warm, 0.75),
                cold - warm);
  }
  return 0;
}
