// Numbers unique in the process: they tell a new object from an old one at the same address.
#pragma once

#include <atomic>
#include <cstdint>

namespace floodgate::detail {

/// The next number of one process-wide sequence, from 1 on; thread-safe.
inline std::uint64_t next_serial_number() noexcept {
  static std::atomic<std::uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace floodgate::detail
