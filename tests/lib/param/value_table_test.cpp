// The bounded per-value table of hot-parameter rules.
#include "param/value_table.hpp"

#include "param/param_slot.hpp"

#include "lib/support/slot_harness.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace floodgate::param_detail {
namespace {

value_key key(int i) { return value_hasher(1234)(std::to_string(i)); }

TEST(ValueKey, IntegersAndTheirDecimalTextAreOneKey) {
  char buffer[integer_text_size];
  const value_hasher hash(9);
  EXPECT_EQ(value_text(param_value{std::int64_t{-42}}, buffer), "-42");
  EXPECT_EQ(hash(value_text(param_value{7}, buffer)), hash("7"));
  EXPECT_NE(hash("7"), value_hasher(10)("7")) << "the seed changes every key";
  EXPECT_NE(hash("ab"), hash("ba"));
  EXPECT_NE(hash(""), hash(std::string_view("\0", 1)));
  EXPECT_NE(hash(std::string_view("\0", 1)), hash(std::string_view("\0\0", 2)));
}

TEST(ValueKey, EveryByteOfEveryLengthChangesTheKey) {
  const value_hasher hash(5);
  for (std::size_t n = 1; n <= 72; ++n) {
    const std::string base(n, 'a');
    for (std::size_t i = 0; i < n; ++i) {
      std::string changed = base;
      changed[i] = 'b';
      EXPECT_NE(hash(base), hash(changed)) << "length " << n << ", byte " << i;
    }
  }
}

TEST(ValueKey, ALengthChangesTheKeyEvenWhenTheWordsAreEqual) {
  // "aaaaaaaa" + k × "a" for k < 8 reads the same two words: only the length tells them apart.
  const value_hasher hash(5);
  for (std::size_t n = 1; n <= 40; ++n) {
    EXPECT_NE(hash(std::string(n, 'a')), hash(std::string(n + 1, 'a'))) << "length " << n;
  }
}

TEST(ValueKey, EachTableIsSeededWithItsOwnUnrelatedSeed) {
  // Tables made one after another (a reload builds many) must not share or step their seeds:
  // successive seeds differ in about half their bits.
  std::set<std::uint64_t> seeds;
  std::uint64_t previous = random_seed();
  for (int i = 0; i < 1000; ++i) {
    const std::uint64_t seed = random_seed();
    seeds.insert(seed);
    const int differing = std::popcount(seed ^ previous);
    EXPECT_GT(differing, 8) << "seed " << i;
    EXPECT_LT(differing, 56) << "seed " << i;
    previous = seed;
  }
  EXPECT_EQ(seeds.size(), 1000u);
}

TEST(ValueKey, DistinctValuesSpreadOverTheWholeKey) {
  // A flood of similar values (user ids) must not share keys or crowd into a few sets.
  const value_hasher hash(77);
  std::set<std::uint64_t> los;
  std::set<std::uint64_t> his;
  std::array<int, 64> buckets{};
  constexpr int values = 100'000;
  for (int i = 0; i < values; ++i) {
    const value_key k = hash("user-" + std::to_string(i));
    los.insert(k.lo);
    his.insert(k.hi);
    ++buckets[k.lo >> 58];
  }
  EXPECT_EQ(los.size(), static_cast<std::size_t>(values));
  EXPECT_EQ(his.size(), static_cast<std::size_t>(values));
  for (const int b : buckets) {
    EXPECT_GT(b, values / 64 * 8 / 10);
    EXPECT_LT(b, values / 64 * 12 / 10);
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

/// The way of a one-set table that `s` is, from its address (a way is one 64-byte line).
std::size_t way_in_one_set(const value_table::slot& s, const value_table::slot& way0) {
  return static_cast<std::size_t>(reinterpret_cast<const char*>(s.state) -
                                  reinterpret_cast<const char*>(way0.state)) /
         64;
}

TEST(ValueTable, ASetEvictsWithASecondChanceForRecentlyUsedValues) {
  value_table t(value_table::ways);  // one set: every key competes for the same slots
  bool inserted = false;
  std::array<value_table::slot, 8> slots;
  for (int i = 0; i < 8; ++i) {
    slots[i] = t.find_or_insert(key(i), 0, inserted);
    ASSERT_TRUE(slots[i]);
  }
  // The value in each way (values take their home way when free, so the order is the keys').
  const auto lowest = *std::min_element(slots.begin(), slots.end(), [](auto& a, auto& b) {
    return a.state < b.state;
  });
  std::array<int, 8> in_way{};
  for (int i = 0; i < 8; ++i) in_way[way_in_one_set(slots[i], lowest)] = i;

  ASSERT_TRUE(t.find_or_insert(key(8), 0, inserted));  // the hand clears all bits, evicts way 0
  EXPECT_FALSE(t.find(key(in_way[0])));
  EXPECT_TRUE(t.find(key(in_way[1])));  // used again: spared once
  ASSERT_TRUE(t.find_or_insert(key(9), 0, inserted));
  EXPECT_TRUE(t.find(key(in_way[1])));
  EXPECT_FALSE(t.find(key(in_way[2])));
  EXPECT_EQ(t.size(), 8u);
}

// An audit: a paramFlow value limited to 3 passed 6 times in a flood of distinct values, with
// the clock standing still. New values came in referenced; once a set held only values that
// recent, the hand cleared every bit in one turn and took the value it pointed at, in use or not.
TEST(ValueTable, AValueInUseOutlivesAFloodOfValuesSeenOnce) {
  value_table t(value_table::ways);  // one set
  bool inserted = false;
  const value_table::slot hot = t.find_or_insert(key(-1), 42, inserted);
  ASSERT_TRUE(hot);
  ASSERT_TRUE(t.find(key(-1)));  // in use: looked up again
  for (int i = 0; i < 10'000; ++i) {
    ASSERT_TRUE(t.find_or_insert(key(i), 0, inserted));
    if (i % 4 == 3) {
      const value_table::slot again = t.find(key(-1));
      ASSERT_TRUE(again) << "evicted after " << i + 1 << " values seen once";
      ASSERT_EQ(again.state, hot.state);
      ASSERT_EQ(again.state->load(), 42u);
    }
  }
}

// A lookup reads the home way's line first; a value that has it needs no other line, so two
// threads on different values share no line unless the values share a home way.
TEST(ValueTable, AValueTakesItsHomeWayWhenItIsFree) {
  value_table t(value_table::ways);  // one set
  bool inserted = false;
  // Keys with distinct home ways, inserted in an order other than their ways' order.
  std::array<int, value_table::ways> with_home;
  with_home.fill(-1);
  for (int i = 0; std::count(with_home.begin(), with_home.end(), -1) > 0; ++i) {
    auto& k = with_home[value_table::home_way(key(i))];
    if (k < 0) k = i;
  }
  std::array<value_table::slot, value_table::ways> slots;
  for (std::size_t w = value_table::ways; w-- > 0;) {  // the last home way first
    slots[w] = t.find_or_insert(key(with_home[w]), 0, inserted);
    ASSERT_TRUE(slots[w]);
  }
  for (std::size_t w = 0; w < value_table::ways; ++w) {
    EXPECT_EQ(way_in_one_set(slots[w], slots[0]), w) << "key " << with_home[w];
  }
  EXPECT_EQ(t.size(), value_table::ways);
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

// Threads serving different values must not write one cache line: with the eight token words
// of a set on one line, two threads on their own values ran at a third of their speed.
TEST(ValueTable, TheValuesOfASetNeverShareACacheLine) {
  value_table t(value_table::ways);  // one set
  bool inserted = false;
  std::vector<std::uintptr_t> lines;
  for (int i = 0; i < 8; ++i) {
    const auto s = t.find_or_insert(key(i), 0, inserted);
    ASSERT_TRUE(s);
    const auto state_line = reinterpret_cast<std::uintptr_t>(s.state) / 64;
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(s.in_flight) / 64, state_line)
        << "a value's token word and in-flight count are written together";
    lines.push_back(state_line);
  }
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(std::unique(lines.begin(), lines.end()), lines.end());
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
  const auto r = resource_param_rules::build({{rule, 0}}, nullptr, true);
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

TEST(ParamFlowMemory, ALimitedValueKeepsItsLimitThroughAFloodOfOtherValues) {
  test_support::slot_harness h;  // the clock stands still: nothing refills
  param_flow_rule rule;
  rule.resource = "res";
  rule.param_idx = 0;
  rule.count = 3;
  const auto r = resource_param_rules::build({{rule, 0}}, nullptr, true);
  entry_tokens tokens;
  const std::array<param_value, 1> hot{std::string_view{"HOT"}};
  int passed = 0;
  for (std::int64_t i = 0; i < 400'000; ++i) {
    const std::array<param_value, 1> args{i};
    ASSERT_EQ(r->check(h.check({}, entry_type::inbound, args), tokens).outcome,
              slot_verdict::kind::pass);
    if (i % 100 == 0) {
      passed += r->check(h.check({}, entry_type::inbound, hot), tokens).outcome ==
                        slot_verdict::kind::pass
                    ? 1
                    : 0;
    }
  }
  EXPECT_EQ(passed, 3) << "HOT got a fresh limit after being evicted";
}

TEST(ParamFlowMemory, CapacityFollowsDurationUpToTwoHundredThousand) {
  param_flow_rule rule;
  rule.resource = "res";
  rule.param_idx = 0;
  rule.duration_in_sec = 10;
  EXPECT_EQ(resource_param_rules::build({{rule, 0}}, nullptr, true)->value_capacity(), 40'000u);
  rule.duration_in_sec = 3600;
  EXPECT_EQ(resource_param_rules::build({{rule, 0}}, nullptr, true)->value_capacity(), 200'000u);
}

}  // namespace
}  // namespace floodgate::param_detail
