// Where system rules get the machine's load and CPU usage from.
#pragma once

#include <memory>

namespace floodgate {

/** Load and CPU readings for system rules, sampled off the request path.

    @par Thread Safety
    Reads are lock-free and may happen on any thread.
*/
class system_status_source {
 public:
  virtual ~system_status_source() = default;
  /// The 1-minute load average; negative before the first sample.
  virtual double load1() const noexcept = 0;
  /// max(process, machine) CPU usage in 0..1; negative before the first sample.
  virtual double cpu_usage() const noexcept = 0;
};

/** The process-wide sampler: reads /proc about once a second on its own thread, started on first
    use and stopped when the last reference goes. */
std::shared_ptr<system_status_source> process_system_status();

}  // namespace floodgate
