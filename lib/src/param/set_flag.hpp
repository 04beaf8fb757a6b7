// The flag that guards a set of slots in the parameter tables: a try-lock that never waits.
#pragma once

#include <atomic>

namespace floodgate::param_detail {

/// A pause for a spin loop: lets the sibling hyper-thread run, saves power.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// Takes `flag` if it is free within `spins` tries (acquire); false if another thread holds it.
inline bool try_take(std::atomic<bool>& flag, int spins) noexcept {
  for (int i = 0; i < spins; ++i) {
    if (!flag.load(std::memory_order_relaxed) && !flag.exchange(true, std::memory_order_acquire)) {
      return true;
    }
    cpu_relax();
  }
  return false;
}

}  // namespace floodgate::param_detail
