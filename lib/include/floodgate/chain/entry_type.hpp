#pragma once

#include <cstdint>

namespace floodgate {

/** Inbound entries are requests this process serves (counted in the global inbound node and
    subject to system rules); outbound entries are calls it makes to its dependencies. */
enum class entry_type : std::uint8_t { inbound, outbound };

}  // namespace floodgate
