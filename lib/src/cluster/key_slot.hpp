// Redis Cluster's key → slot map: CRC16 (XMODEM) of the key's hash tag, modulo 16384.
#pragma once

#include <cstdint>
#include <string_view>

namespace floodgate::cluster::detail {

inline constexpr std::uint16_t slot_count = 16384;

/// The part of `key` that is hashed: the text between the first `{` and the next `}` when it is
/// not empty, else the whole key (the Redis Cluster specification's hash tags).
std::string_view hash_tag(std::string_view key) noexcept;

/// The slot of `key`.
std::uint16_t key_slot(std::string_view key) noexcept;

}  // namespace floodgate::cluster::detail
