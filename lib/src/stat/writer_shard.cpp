#include "stat/writer_shard.hpp"

#include <algorithm>

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

namespace floodgate::stat {

namespace {
constexpr std::uint32_t max_cpu_shards = 16;
}  // namespace

std::uint32_t detail::compute_cpu_shard_limit() noexcept {
  // One per possible CPU number; CPUs numbered beyond the last write the shared shard.
  const auto n = static_cast<std::uint32_t>(std::clamp(get_nprocs_conf(), 1, int{max_cpu_shards}));
  cpu_shard_limit.store(n, std::memory_order_relaxed);
  return n;
}

void detail::note_used_shard(std::uint32_t index) noexcept {
  used_shard_bits.fetch_or(1u << index, std::memory_order_acq_rel);
}

namespace {
long membarrier(int cmd) noexcept { return syscall(__NR_membarrier, cmd, 0, 0); }
}  // namespace

bool cpu_sequence_restart_available() noexcept {
#if FLOODGATE_SHARD_RSEQ
  static const bool available = [] {
    const long supported = membarrier(MEMBARRIER_CMD_QUERY);
    return supported >= 0 && (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) != 0 &&
           membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ) == 0;
  }();
  return available;
#else
  return false;
#endif
}

bool restart_cpu_sequences() noexcept {
  return cpu_sequence_restart_available() &&
         membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) == 0;
}

std::uint32_t shard_count() noexcept { return detail::cpu_shards() + 1; }

}  // namespace floodgate::stat
