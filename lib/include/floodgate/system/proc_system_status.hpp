// The Linux sampler behind system rules: load average and CPU usage from /proc.
#pragma once

#include <floodgate/chain/clock.hpp>
#include <floodgate/system/system_status.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace floodgate {

/** Samples the 1-minute load average and CPU usage from /proc, as Sentinel's
    SystemStatusListener does every second.

    CPU usage is max(this process's usage, the machine's usage), each in 0..1: the process's is
    Δ(utime + stime of /proc/self/stat) / elapsed time / cores, the machine's is the busy share of
    Δ(/proc/stat `cpu` line). CPU needs two samples; until then (and load until the first one) the
    readings are -1, which no system rule trips on.

    With `start_thread` the constructor samples at once (load is known from then on) and the
    sampler's thread samples again every `period` (CPU is known after the first: over a whole
    period, as system rules want, not over the process's start-up); the destructor stops it
    immediately. Without it, tests call sample_once() and drive
    time with a manual clock.

    @par Thread Safety
    The readings are lock-free and may be read from any thread. sample_once() may be called from
    any thread (calls are serialized).
*/
class proc_system_status final : public system_status_source {
 public:
  struct options {
    std::string loadavg_path = "/proc/loadavg";
    std::string stat_path = "/proc/stat";
    std::string self_stat_path = "/proc/self/stat";
    /// Time source for the process-usage divisor; null means the steady clock.
    const clock* time = nullptr;
    unsigned cores = 0;         ///< 0: the number of online processors
    long ticks_per_second = 0;  ///< 0: sysconf(_SC_CLK_TCK)
    std::chrono::milliseconds period{1000};
    bool start_thread = true;
  };

  explicit proc_system_status(options opts);
  proc_system_status() : proc_system_status(options{}) {}
  ~proc_system_status() override;
  proc_system_status(const proc_system_status&) = delete;
  proc_system_status& operator=(const proc_system_status&) = delete;

  double load1() const noexcept override { return load1_.load(std::memory_order_relaxed); }
  double cpu_usage() const noexcept override { return cpu_.load(std::memory_order_relaxed); }
  /// This process's share of all cores, 0..1; -1 before two samples.
  double process_cpu_usage() const noexcept { return process_cpu_.load(std::memory_order_relaxed); }
  /// The machine's busy share, 0..1; -1 before two samples.
  double machine_cpu_usage() const noexcept { return machine_cpu_.load(std::memory_order_relaxed); }

  /// Reads the files once and updates the readings; a file that cannot be read keeps its reading.
  void sample_once() noexcept;

 private:
  struct cpu_times {
    std::uint64_t busy = 0;
    std::uint64_t total = 0;
  };
  void run();

  options opts_;
  const clock& time_;

  std::mutex sample_mutex_;  // serializes sample_once(); never taken on the request path
  bool have_previous_ = false;
  cpu_times previous_machine_;
  std::uint64_t previous_process_ticks_ = 0;
  std::int64_t previous_ns_ = 0;

  std::atomic<double> load1_{-1};
  std::atomic<double> cpu_{-1};
  std::atomic<double> process_cpu_{-1};
  std::atomic<double> machine_cpu_{-1};

  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace floodgate
