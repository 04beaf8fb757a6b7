// What the steady clock adds to CLOCK_MONOTONIC (clock.cpp); for tests that compare the two.
#pragma once

#include <cstdint>

namespace floodgate::detail {

/// How far CLOCK_MONOTONIC was behind CLOCK_REALTIME at start-up, modulo a day: nanoseconds in
/// [0, one day), added to every steady_clock reading.
std::int64_t steady_clock_offset_ns() noexcept;

}  // namespace floodgate::detail
