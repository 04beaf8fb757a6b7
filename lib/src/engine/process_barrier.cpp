#include "engine/rcu_cell.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace floodgate::detail {

namespace {

long membarrier(int cmd) noexcept { return syscall(__NR_membarrier, cmd, 0, 0); }

bool register_barrier() noexcept {
  const long supported = membarrier(MEMBARRIER_CMD_QUERY);
  if (supported < 0 || (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) {
    return false;
  }
  return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

}  // namespace

bool process_wide_barrier_available() noexcept {
  static const bool available = register_barrier();
  return available;
}

bool process_wide_barrier() noexcept {
  return process_wide_barrier_available() && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0;
}

}  // namespace floodgate::detail
