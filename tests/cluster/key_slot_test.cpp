#include "cluster/key_slot.hpp"

#include <gtest/gtest.h>

namespace floodgate::cluster::detail {
namespace {

TEST(KeySlot, IsCrc16XmodemModulo16384) {
  EXPECT_EQ(key_slot("123456789"), 0x31C3);  // the CRC-16/XMODEM check value
  EXPECT_EQ(key_slot("foo"), 12182);         // CLUSTER KEYSLOT foo
}

TEST(KeySlot, KeysSharingAHashTagShareASlot) {
  EXPECT_EQ(hash_tag("{ns:GET:/a}:window"), "ns:GET:/a");
  EXPECT_EQ(key_slot("{ns:rule}:window"), key_slot("{ns:rule}:other"));
  EXPECT_EQ(hash_tag("{}:x"), "{}:x");  // an empty tag hashes the whole key
  EXPECT_EQ(hash_tag("no-tag"), "no-tag");
}

}  // namespace
}  // namespace floodgate::cluster::detail
