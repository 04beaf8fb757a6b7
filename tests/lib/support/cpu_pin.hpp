// Keeps the calling test thread on the CPU it runs on, so that its writes stay in one CPU shard.
#pragma once

#include "stat/writer_shard.hpp"

#include <sched.h>

#include <array>
#include <optional>

namespace floodgate::test {

/** For its scope, binds the calling thread to the CPU it runs on (sched_setaffinity), and gives
    the old affinity back at the end. A test that relies on one CPU shard (leases, pending words)
    then cannot be migrated half-way. per_cpu() is false where the thread writes the shared shard
    (no rseq, TSan): such a test skips. */
class cpu_pin {
 public:
  cpu_pin() noexcept {
    pinned_ = sched_getaffinity(0, sizeof before_, &before_) == 0;
    const int cpu = sched_getcpu();
    if (pinned_ && cpu >= 0) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      pinned_ = sched_setaffinity(0, sizeof one, &one) == 0;
    }
  }
  ~cpu_pin() {
    if (pinned_) sched_setaffinity(0, sizeof before_, &before_);
  }
  cpu_pin(const cpu_pin&) = delete;
  cpu_pin& operator=(const cpu_pin&) = delete;

  /// The thread is bound and writes its CPU's shard.
  bool per_cpu() const noexcept { return pinned_ && stat::this_thread_shard().exclusive; }

 private:
  cpu_set_t before_{};
  bool pinned_ = false;
};

/// The first two CPUs this process may run on, or nothing when it may run on fewer.
inline std::optional<std::array<int, 2>> two_allowed_cpus() noexcept {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < 2) {
    return std::nullopt;
  }
  std::array<int, 2> cpus{};
  for (int cpu = 0, found = 0; cpu < CPU_SETSIZE && found < 2; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus[static_cast<std::size_t>(found++)] = cpu;
  }
  return cpus;
}

}  // namespace floodgate::test
