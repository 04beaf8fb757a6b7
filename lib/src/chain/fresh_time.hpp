// A millisecond reading that no busy thread can make stale, cheaper than a full clock read.
#pragma once

#include <floodgate/chain/clock.hpp>

#include <cstdint>

namespace floodgate::detail {

/** `c`'s time in milliseconds, at most fresh_ms_lag() behind it. The steady clock's now_ms()
    comes from a ticker thread that a busy machine may not run for milliseconds; for the process
    clock this reads CLOCK_MONOTONIC_COARSE instead (kept by the kernel's timer tick, a vDSO read
    of a few nanoseconds); any other clock (a manual clock in tests) is read with now_ns(). */
std::int64_t fresh_ms(const clock& c) noexcept;

/// How far fresh_ms() may lag the clock: the kernel tick, in whole milliseconds (rounded up).
std::int64_t fresh_ms_lag() noexcept;

}  // namespace floodgate::detail
