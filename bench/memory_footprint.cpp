// Resident memory of 6000 resources, each entered once with one origin.
// Run: build/release/bench/floodgate_memory
#include <floodgate/engine/engine.hpp>

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

int main() {
  const long before = resident_kib();
  floodgate::engine eng;
  constexpr int resources = 6000;
  for (int i = 0; i < resources; ++i) {
    const std::string name = "GET:/resource/" + std::to_string(i);
    const std::string origin = "caller-" + std::to_string(i);
    floodgate::context ctx{eng, "http-inbound", origin};
    auto e = eng.enter(ctx, name, {.type = floodgate::entry_type::inbound});
  }
  const long after = resident_kib();
  std::printf("resources %d, resident before %ld KiB, after %ld KiB, total %.1f MiB, "
              "%.0f bytes per resource\n",
              resources, before, after, static_cast<double>(after) / 1024.0,
              static_cast<double>(after - before) * 1024.0 / resources);
  return after <= 64 * 1024 ? 0 : 1;
}
