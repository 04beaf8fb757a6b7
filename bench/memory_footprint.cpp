// Resident memory of 6000 resources, each with SPEC §7's rules (one QPS rule and one slow-ratio
// breaker) and entered once with one origin.
// Run: build/release/bench/floodgate_memory [--no-rules]
#include <floodgate/engine/engine.hpp>

#include <malloc.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace {

long resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::stol(line.substr(6));
    }
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  const bool with_rules = !(argc > 1 && std::string(argv[1]) == "--no-rules");
  const long before = resident_kib();
  floodgate::engine eng;
  constexpr int resources = 6000;
  floodgate::rule_set rules;
  for (int i = 0; i < resources && with_rules; ++i) {
    const std::string name = "GET:/resource/" + std::to_string(i);
    rules.flow.push_back({.resource = name, .count = 1000});
    rules.degrade.push_back({.resource = name,
                             .count = 200,
                             .slow_ratio_threshold = 0.5,
                             .min_request_amount = 5,
                             .stat_interval_ms = 1000,
                             .time_window_sec = 10});
  }
  if (!eng.load_rules(rules).ok()) {
    std::fprintf(stderr, "rules rejected\n");
    return 2;
  }
  rules = {};
  for (int i = 0; i < resources; ++i) {
    const std::string name = "GET:/resource/" + std::to_string(i);
    const std::string origin = "caller-" + std::to_string(i);
    floodgate::context ctx{eng, "http-inbound", origin};
    auto e = eng.enter(ctx, name, {.type = floodgate::entry_type::inbound});
  }
  malloc_trim(0);  // the rule list built above is freed: count what the engine keeps
  const long after = resident_kib();
  std::printf("resources %d %s rules, resident before %ld KiB, after %ld KiB, total %.1f MiB, "
              "%.0f bytes per resource\n",
              resources, with_rules ? "with" : "without", before, after, static_cast<double>(after) / 1024.0,
              static_cast<double>(after - before) * 1024.0 / resources);
  return after <= 32 * 1024 ? 0 : 1;
}
