// A system-status source whose readings are set by hand; for tests.
#pragma once

#include <floodgate/system/system_status.hpp>

#include <atomic>

namespace floodgate {

/** Load and CPU readings set by the caller, like @ref manual_clock for time.

    Starts with no sample (both readings -1). @par Thread Safety Safe to read and set concurrently.
*/
class manual_system_status final : public system_status_source {
 public:
  double load1() const noexcept override { return load1_.load(std::memory_order_relaxed); }
  double cpu_usage() const noexcept override { return cpu_.load(std::memory_order_relaxed); }

  void set_load1(double v) noexcept { load1_.store(v, std::memory_order_relaxed); }
  void set_cpu_usage(double v) noexcept { cpu_.store(v, std::memory_order_relaxed); }

 private:
  std::atomic<double> load1_{-1};
  std::atomic<double> cpu_{-1};
};

}  // namespace floodgate
