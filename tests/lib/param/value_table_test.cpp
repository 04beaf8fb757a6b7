// The bounded per-value table of hot-parameter rules.
#include "param/value_table.hpp"

#include <floodgate/param/param_slot.hpp>

#include "lib/param/slot_harness.hpp"

#include <gtest/gtest.h>

#include <array>
#include <string>

namespace floodgate::param_detail {
namespace {

value_key key(int i) { return hash_value(std::to_string(i), 1234); }

TEST(ValueKey, IntegersAndTheirDecimalTextAreOneKey) {
  char buffer[integer_text_size];
  EXPECT_EQ(value_text(param_value{std::int64_t{-42}}, buffer), "-42");
  EXPECT_EQ(hash_value(value_text(param_value{7}, buffer), 9), hash_value("7", 9));
  EXPECT_NE(hash_value("7", 9), hash_value("7", 10)) << "the seed changes every key";
  EXPECT_NE(hash_value("ab", 9), hash_value("ba", 9));
  EXPECT_NE(hash_value("", 9), hash_value(std::string_view("\0", 1), 9));
}

TEST(ValueKey, EveryByteOfEveryLengthChangesTheKey) {
  for (std::size_t n = 1; n <= 24; ++n) {
    const std::string base(n, 'a');
    for (std::size_t i = 0; i < n; ++i) {
      std::string changed = base;
      changed[i] = 'b';
      EXPECT_NE(hash_value(base, 5), hash_value(changed, 5)) << "length " << n << ", byte " << i;
    }
  }
}

TEST(ValueTable, FindsWhatWasInserted) {
  value_table t(64);
  bool inserted = false;
  const auto a = t.find_or_insert(key(1), 77, inserted);
  ASSERT_TRUE(a);
  EXPECT_TRUE(inserted);
  EXPECT_EQ(a.state->load(), 77u);
  EXPECT_EQ(t.find(key(1)).state, a.state);
  EXPECT_EQ(t.find_or_insert(key(1), 5, inserted).state, a.state);
  EXPECT_FALSE(inserted);
  EXPECT_FALSE(t.find(key(2)));
  EXPECT_EQ(t.size(), 1u);
}

TEST(ValueTable, CapacityIsAMultipleOfTheWays) {
  EXPECT_EQ(value_table(4000).capacity(), 4000u);
  EXPECT_EQ(value_table(9).capacity(), 16u);
}

TEST(ValueTable, ASetEvictsWithASecondChanceForRecentlyUsedValues) {
  value_table t(value_table::ways);  // one set: every key competes for the same slots
  bool inserted = false;
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(t.find_or_insert(key(i), 0, inserted));
  ASSERT_TRUE(t.find_or_insert(key(8), 0, inserted));  // the hand clears all bits, evicts 0
  EXPECT_FALSE(t.find(key(0)));
  EXPECT_TRUE(t.find(key(1)));  // used again: spared once
  ASSERT_TRUE(t.find_or_insert(key(9), 0, inserted));
  EXPECT_TRUE(t.find(key(1)));
  EXPECT_FALSE(t.find(key(2)));
  EXPECT_EQ(t.size(), 8u);
}

TEST(ValueTable, ValuesWithEntriesInFlightAreNeverEvicted) {
  value_table t(value_table::ways);
  bool inserted = false;
  std::array<value_table::slot, 8> slots;
  for (int i = 0; i < 8; ++i) {
    slots[i] = t.find_or_insert(key(i), 0, inserted);
    ASSERT_EQ(t.acquire_in_flight(key(i), slots[i]), 1);
  }
  EXPECT_FALSE(t.find_or_insert(key(100), 0, inserted)) << "nothing can be evicted";
  slots[5].in_flight->fetch_sub(1);
  EXPECT_TRUE(t.find_or_insert(key(100), 0, inserted));
  EXPECT_FALSE(t.find(key(5)));
  for (int i = 0; i < 8; ++i) {
    if (i != 5) {
      EXPECT_TRUE(t.find(key(i)));
    }
  }
}

TEST(ValueTable, AMillionDistinctValuesStayWithinTheCapacity) {
  value_table t(4000);
  bool inserted = false;
  for (int i = 0; i < 1'000'000; ++i) t.find_or_insert(key(i), 0, inserted);
  EXPECT_EQ(t.capacity(), 4000u);
  EXPECT_EQ(t.size(), 4000u);
}

TEST(ParamFlowMemory, AFloodOfDistinctValuesKeepsEachRuleWithinItsBound) {
  test_support::slot_harness h;
  param_flow_rule rule;
  rule.resource = "res";
  rule.param_idx = 0;
  rule.count = 1;
  const auto r = resource_param_rules::build({{rule, 0}}, nullptr);
  ASSERT_EQ(r->value_capacity(), 4000u) << "min(4000 × durationInSec, 200000)";
  entry_tokens tokens;
  for (std::int64_t i = 0; i < 1'000'000; ++i) {
    const std::array<param_value, 1> args{i};
    ASSERT_EQ(r->check(h.check({}, entry_type::inbound, args), tokens).outcome,
              slot_verdict::kind::pass);
  }
  EXPECT_EQ(r->tracked_values(), 4000u);
  // A recent value is still tracked: its second entry in the same second is blocked.
  const std::array<param_value, 1> recent{std::int64_t{999'999}};
  EXPECT_EQ(r->check(h.check({}, entry_type::inbound, recent), tokens).outcome,
            slot_verdict::kind::block);
}

TEST(ParamFlowMemory, CapacityFollowsDurationUpToTwoHundredThousand) {
  param_flow_rule rule;
  rule.resource = "res";
  rule.param_idx = 0;
  rule.duration_in_sec = 10;
  EXPECT_EQ(resource_param_rules::build({{rule, 0}}, nullptr)->value_capacity(), 40'000u);
  rule.duration_in_sec = 3600;
  EXPECT_EQ(resource_param_rules::build({{rule, 0}}, nullptr)->value_capacity(), 200'000u);
}

}  // namespace
}  // namespace floodgate::param_detail
