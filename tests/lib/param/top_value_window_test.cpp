// The windowed top-N summary: sliding expiry, Space-Saving counts, fixed memory, Zipf accuracy.
#include "param/hot_key_tracker.hpp"
#include "param/top_value_window.hpp"

#include "stat/writer_shard.hpp"

#include "lib/support/cpu_pin.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace floodgate::param_detail {
namespace {

// Every single-thread test runs twice: from a thread that writes no CPU's shard (requests go
// straight to the shared sets) and from one bound to its CPU, as a request on a CPU with a writer
// shard is (requests of known values wait in the CPU's pending words).
struct TopValueWindow : ::testing::TestWithParam<bool> {
  value_hasher hasher{42};
  top_value_window window{5000, 512};  // 5 s in 10 buckets of 500 ms
  std::optional<test::cpu_pin> pin;
  std::optional<stat::shared_shard_scope> shared;

  void SetUp() override {
    if (GetParam()) {
      pin.emplace();
      if (!pin->per_cpu()) {
        GTEST_SKIP() << "no per-CPU writer shard here (no rseq, or TSan)";
      }
    } else {
      shared.emplace();
    }
  }

  void record(const std::string& v, std::int64_t now_ms, int times = 1) {
    for (int i = 0; i < times; ++i) window.record(hasher(v), v, now_ms);
  }
  std::uint64_t count(const std::string& v, std::int64_t now_ms) {
    return window.count(hasher(v), now_ms);
  }
};

TEST_P(TopValueWindow, ReportsValuesHighestFirstWithTheirCounts) {
  record("a", 1000, 3);
  record("b", 1000, 7);
  record("c", 1200, 5);
  const auto values = window.values(1200);
  ASSERT_EQ(values.size(), 3u);
  EXPECT_EQ(values[0].text, "b");
  EXPECT_EQ(values[0].count, 7u);
  EXPECT_EQ(values[1].text, "c");
  EXPECT_EQ(values[1].count, 5u);
  EXPECT_EQ(values[2].text, "a");
  EXPECT_EQ(values[2].count, 3u);
  EXPECT_EQ(count("b", 1200), 7u);
  EXPECT_EQ(count("nobody", 1200), 0u);
}

TEST_P(TopValueWindow, CountsSumOverTheBucketsOfTheWindowAndExpireBucketByBucket) {
  record("a", 10'000, 4);  // bucket [10000, 10500)
  record("a", 12'000, 6);  // bucket [12000, 12500)
  EXPECT_EQ(count("a", 12'000), 10u);
  // The window is the 10 newest buckets: the first leaves once 10 newer ones have started.
  EXPECT_EQ(count("a", 14'999), 10u);
  EXPECT_EQ(count("a", 15'000), 6u);
  EXPECT_EQ(window.values(15'000).at(0).count, 6u);
  EXPECT_EQ(count("a", 17'000), 0u);
  EXPECT_TRUE(window.values(17'000).empty());
}

TEST_P(TopValueWindow, ABucketIsEmptiedWhenItsTimeComesAgain) {
  record("old", 10'000, 9);
  record("new", 15'000, 2);  // the same ring position, one window later
  const auto values = window.values(15'000);
  ASSERT_EQ(values.size(), 1u);
  EXPECT_EQ(values[0].text, "new");
  EXPECT_EQ(values[0].count, 2u);
}

TEST_P(TopValueWindow, RequestsOlderThanTheirBucketAreNotCounted) {
  record("a", 15'000);
  record("a", 10'000);  // a thread that read the clock a window ago
  EXPECT_EQ(count("a", 15'000), 1u);
}

TEST_P(TopValueWindow, LongValuesAreShownCutButCountedWhole) {
  const std::string long_a(100, 'a');
  std::string long_b = long_a;
  long_b.back() = 'b';
  record(long_a, 1000, 2);
  record(long_b, 1000, 1);
  const auto values = window.values(1000);
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(values[0].text, long_a.substr(0, top_value_window::text_room));
  EXPECT_EQ(values[0].count, 2u);
  EXPECT_EQ(values[1].count, 1u);
}

TEST_P(TopValueWindow, ANewValueInAFullSetInheritsTheSmallestCount) {
  top_value_window tiny{5000, top_value_window::ways};  // one set of 8 slots per bucket
  for (int v = 0; v < 8; ++v) {
    const std::string text = "v" + std::to_string(v);
    for (int i = 0; i <= v; ++i) tiny.record(hasher(text), text, 1000);  // v0: 1 ... v7: 8
  }
  tiny.record(hasher("new"), "new", 1000);
  EXPECT_EQ(tiny.count(hasher("v0"), 1000), 0u) << "the smallest was replaced";
  EXPECT_EQ(tiny.count(hasher("new"), 1000), 2u) << "Space-Saving: 1 inherited + its own";
  EXPECT_EQ(tiny.count(hasher("v7"), 1000), 8u);
  EXPECT_EQ(tiny.guaranteed_count(hasher("new"), 1000), 1u) << "only its own is certain";
  EXPECT_EQ(tiny.guaranteed_count(hasher("v7"), 1000), 8u);
  const auto values = tiny.values(1000);
  const auto it = std::find_if(values.begin(), values.end(),
                               [](const auto& c) { return c.text == "new"; });
  ASSERT_NE(it, values.end());
  EXPECT_EQ(it->count, 2u);
  EXPECT_EQ(it->error, 1u);
}

// A scan of distinct values (a crawler, a key sweep): each inherits the count of the value it
// replaces, so its count grows with the scan, but no value had more than one request and none
// is hot. A value that really had more than the threshold still is.
TEST_P(TopValueWindow, AScanOfDistinctValuesMakesNoneOfThemHot) {
  hot_key_tracker tracker(hasher, 5000, 10, 5);
  const auto record_in = [&](const std::string& v) { tracker.record(hasher(v), v, 1000); };
  for (int i = 0; i < 100; ++i) record_in("really-hot");  // more than the scan's ~40 a slot
  for (int v = 0; v < 20'000; ++v) record_in("scan-" + std::to_string(v));
  std::vector<hot_key_tracker::transition> changed;
  tracker.refresh(1000, changed);
  const auto view = tracker.last();
  ASSERT_FALSE(view.top.empty());
  EXPECT_GT(view.top.back().count, 5u) << "the scan's counts are inherited ones";
  EXPECT_EQ(view.hot_values, 1u);
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].value, "really-hot");
  EXPECT_TRUE(tracker.is_hot("really-hot", 1000));
  EXPECT_FALSE(tracker.is_hot("scan-19999", 1000));
}

// Each value has two candidate sets: a bucket half full (256 values in 512 slots) keeps every
// value with its exact count. With one set per value, sets of nine or more values replaced
// values on every request of theirs, and their counts were lost.
TEST_P(TopValueWindow, AHalfFullBucketKeepsEveryValueExactly) {
  for (int round = 0; round < 3; ++round) {
    for (int v = 0; v < 256; ++v) record("user-" + std::to_string(v), 1000);
  }
  const auto values = window.values(1000);
  ASSERT_EQ(values.size(), 256u);
  for (const auto& v : values) EXPECT_EQ(v.count, 3u) << v.text;
  EXPECT_EQ(window.skipped(), 0u);
}

TEST_P(TopValueWindow, MemoryStaysFixedUnderTenMillionDistinctValues) {
  const std::size_t before = window.memory_bytes();
  char buffer[integer_text_size];
  for (std::int64_t i = 0; i < 10'000'000; ++i) {
    const std::string_view text = detail::integer_text(i, buffer);
    window.record(hasher(text), text, 1000 + i / 4000);  // spread over 2500 ms
  }
  EXPECT_EQ(window.memory_bytes(), before);
  EXPECT_LE(window.values(3500).size(), 10 * window.slots_per_bucket());
  EXPECT_EQ(window.skipped(), 0u) << "one thread never finds a set busy";
}

TEST_P(TopValueWindow, ConcurrentRequestsOfAKnownValueAreAllCountedWhileReadersMerge) {
  record("hot", 1000);
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) EXPECT_LE(window.values(1000).size(), 41u);
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < 20'000; ++i) {
        // Half the writers write their CPU's shard, as engine calls do; half the shared sets.
        std::optional<stat::shared_shard_scope> shared_sets;
        if (t % 2 == 1) shared_sets.emplace();
        record("hot", 1000);
        record("cold-" + std::to_string(t) + "-" + std::to_string(i % 10), 1000);
      }
    });
  }
  for (auto& w : writers) w.join();
  done = true;
  reader.join();
  EXPECT_EQ(count("hot", 1000), 80'001u) << "a value in the summary never misses a request";
  std::uint64_t cold = 0;
  for (const auto& v : window.values(1000)) cold += v.text == "hot" ? 0 : v.count;
  EXPECT_EQ(cold + window.skipped(), 80'000u) << "a new value is counted or counted as skipped";
}

TEST_P(TopValueWindow, CountsAreExactAcrossFlushesOfAShardsPendingRequests) {
  const int n = 3 * static_cast<int>(top_value_window::flush_at) + 5;
  record("a", 1000, n);
  EXPECT_EQ(count("a", 1000), static_cast<std::uint64_t>(n));
  EXPECT_EQ(window.values(1000).at(0).count, static_cast<std::uint64_t>(n));
  record("a", 1600, 2);  // the next bucket settles the first one's pending requests
  EXPECT_EQ(count("a", 1600), static_cast<std::uint64_t>(n) + 2);
  EXPECT_EQ(count("a", 5999), static_cast<std::uint64_t>(n) + 2);
  EXPECT_EQ(count("a", 6000), 2u) << "the first bucket left the window, pending or not";
}

TEST_P(TopValueWindow, AReplacedValuesRequestsAreNotGivenToTheNewcomer) {
  top_value_window tiny{5000, top_value_window::ways};  // one set of 8 slots per bucket
  for (int v = 0; v < 8; ++v) {
    const std::string text = "v" + std::to_string(v);
    for (int i = 0; i < 3 + v; ++i) tiny.record(hasher(text), text, 1000);  // v0: 3 ... v7: 10
  }
  tiny.record(hasher("new"), "new", 1000);  // replaces v0, inheriting its 3
  tiny.record(hasher("new"), "new", 1000);
  EXPECT_EQ(tiny.count(hasher("new"), 1000), 5u) << "3 inherited + its own 2, nothing more";
  EXPECT_EQ(tiny.count(hasher("v0"), 1000), 0u);
  tiny.record(hasher("v0"), "v0", 1000);  // v0 comes back in place of the smallest (v1: 4)
  EXPECT_EQ(tiny.count(hasher("v0"), 1000), 5u) << "4 inherited + 1; its old 3 stay dropped";
  EXPECT_EQ(tiny.count(hasher("new"), 1000), 5u);
}

INSTANTIATE_TEST_SUITE_P(WriterShards, TopValueWindow, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "InACpuShard" : "Shared";
                         });

/// Zipf(s) over ranks 1..n by inverse transform on the cumulative weights.
class zipf {
 public:
  zipf(std::size_t n, double s) : cumulative_(n) {
    double total = 0;
    for (std::size_t k = 0; k < n; ++k) {
      total += std::pow(static_cast<double>(k + 1), -s);
      cumulative_[k] = total;
    }
    for (double& c : cumulative_) c /= total;
  }
  template <class Rng>
  std::size_t operator()(Rng& rng) const {
    const double u = std::uniform_real_distribution<double>(0, 1)(rng);
    return static_cast<std::size_t>(
        std::lower_bound(cumulative_.begin(), cumulative_.end(), u) - cumulative_.begin());
  }

 private:
  std::vector<double> cumulative_;
};

// SPEC §8: under Zipf traffic (s = 1.1, 1 M distinct values) the true top 10 are reported, each
// count within 2 %. The tracker is the one a hotKeys rule with `top: 10` gets (512 slots per
// bucket, 10 buckets); the traffic spans the whole window, so every bucket is merged.
TEST(HotKeyAccuracy, ZipfTopTenAreReportedWithinTwoPercent) {
  constexpr std::size_t distinct = 1'000'000;
  constexpr std::size_t requests = 2'000'000;
  const zipf ranks(distinct, 1.1);
  std::mt19937_64 rng(20261125);
  hot_key_tracker tracker(value_hasher(7), 10'000, 10, 1e9);
  std::vector<std::uint32_t> truth(distinct);
  char buffer[integer_text_size];
  const std::int64_t start = 1'000'000;
  for (std::size_t i = 0; i < requests; ++i) {
    const std::size_t rank = ranks(rng);
    ++truth[rank];
    const std::string_view text = detail::integer_text(static_cast<std::int64_t>(rank), buffer);
    // 10 s of traffic: 200 requests per millisecond.
    tracker.record(tracker.hasher()(text), text,
                   start + static_cast<std::int64_t>(i / (requests / 10'000)));
  }
  const std::int64_t now = start + 9'999;
  std::vector<hot_key_tracker::transition> changed;
  tracker.refresh(now, changed);
  const auto top = tracker.last().top;
  ASSERT_EQ(top.size(), 10u);

  std::vector<std::size_t> order(distinct);
  for (std::size_t k = 0; k < distinct; ++k) order[k] = k;
  std::partial_sort(order.begin(), order.begin() + 10, order.end(),
                    [&](std::size_t a, std::size_t b) { return truth[a] > truth[b]; });
  for (std::size_t i = 0; i < 10; ++i) {
    const std::string expected = std::to_string(order[i]);
    const auto it = std::find_if(top.begin(), top.end(),
                                 [&](const auto& c) { return c.text == expected; });
    ASSERT_NE(it, top.end()) << "true rank " << i << " (value " << expected << ") is missing";
    const double true_count = truth[order[i]];
    EXPECT_NEAR(static_cast<double>(it->count), true_count, 0.02 * true_count)
        << "value " << expected;
    std::printf("true rank %zu: value %s, true count %.0f, reported %llu (%+.3f %%)\n", i,
                expected.c_str(), true_count, static_cast<unsigned long long>(it->count),
                100.0 * (static_cast<double>(it->count) - true_count) / true_count);
  }
  RecordProperty("summary_bytes", static_cast<int>(tracker.window().memory_bytes()));
  std::printf("summary memory: %zu bytes (%zu slots per bucket, %zu buckets)\n",
              tracker.window().memory_bytes(), tracker.window().slots_per_bucket(),
              top_value_window::bucket_count);
}

}  // namespace
}  // namespace floodgate::param_detail
