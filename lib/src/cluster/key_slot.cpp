#include "cluster/key_slot.hpp"

namespace floodgate::cluster::detail {

namespace {

/// CRC-16/XMODEM (polynomial 0x1021, initial 0), bit by bit: a slot is computed once per rule.
std::uint16_t crc16(std::string_view data) noexcept {
  std::uint16_t crc = 0;
  for (const char c : data) {
    crc = static_cast<std::uint16_t>(crc ^ (static_cast<std::uint8_t>(c) << 8));
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) != 0 ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021)
                                : static_cast<std::uint16_t>(crc << 1);
    }
  }
  return crc;
}

}  // namespace

std::string_view hash_tag(std::string_view key) noexcept {
  const auto open = key.find('{');
  if (open == std::string_view::npos) return key;
  const auto close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

std::uint16_t key_slot(std::string_view key) noexcept {
  return static_cast<std::uint16_t>(crc16(hash_tag(key)) % slot_count);
}

}  // namespace floodgate::cluster::detail
