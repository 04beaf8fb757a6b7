// Counts heap allocations made by the benchmark process (global operator new is replaced).
#pragma once

#include <cstdint>

namespace floodgate::bench {
std::uint64_t allocations() noexcept;
}
