// Snapshot publication: readers never see a freed snapshot, replaced ones are eventually freed.
#include "engine/rcu_cell.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace floodgate::detail {
namespace {

struct tracked {
  explicit tracked(int v, std::atomic<int>& live) : value(v), live_(live) { ++live_; }
  ~tracked() { --live_; }
  int value;
  std::atomic<int>& live_;
};

TEST(RcuCell, ReplacedValueIsFreedOnlyAfterItsReadersLeave) {
  std::atomic<int> live{0};
  rcu_cell<tracked> cell(std::make_unique<const tracked>(1, live));
  const auto pin = cell.acquire();
  EXPECT_EQ(pin.value->value, 1);
  cell.publish(std::make_unique<const tracked>(2, live));
  cell.publish(std::make_unique<const tracked>(3, live));
  EXPECT_EQ(pin.value->value, 1);  // still readable
  EXPECT_EQ(live.load(), 2) << "value 2 was never pinned: freed as soon as it was replaced";
  cell.release(pin.stripe, pin.slot);
  cell.reclaim();
  cell.reclaim();
  EXPECT_EQ(live.load(), 1);
  EXPECT_EQ(cell.retired_count(), 0u);
  const auto now = cell.acquire();
  EXPECT_EQ(now.value->value, 3);
  cell.release(now.stripe, now.slot);
}

TEST(RcuCell, PinReleasedOnAnotherThreadStillHoldsTheValueUntilThen) {
  std::atomic<int> live{0};
  rcu_cell<tracked> cell(std::make_unique<const tracked>(1, live));
  const auto pin = cell.acquire();  // counted in this thread's own words when it owns a shard
  cell.publish(std::make_unique<const tracked>(2, live));
  cell.reclaim();
  cell.reclaim();
  EXPECT_EQ(live.load(), 2);  // the pinned value survives
  std::thread([&] { cell.release(pin.stripe, pin.slot); }).join();
  cell.reclaim();
  cell.reclaim();
  EXPECT_EQ(live.load(), 1);
  EXPECT_EQ(cell.retired_count(), 0u);
  // The counts balance: a value pinned and released on this thread is freed as well.
  const auto again = cell.acquire();
  cell.publish(std::make_unique<const tracked>(3, live));
  cell.release(again.stripe, again.slot);
  cell.reclaim();
  cell.reclaim();
  EXPECT_EQ(live.load(), 1);
  EXPECT_EQ(cell.retired_count(), 0u);
}

TEST(RcuCell, APinHoldsOnlyItsOwnValue) {
  // A reader that never leaves (a stuck request) keeps its value alive, and nothing else: the
  // values published after it are freed as they are replaced.
  std::atomic<int> live{0};
  rcu_cell<tracked> cell(std::make_unique<const tracked>(0, live));
  const auto stuck = cell.acquire();
  for (int i = 1; i <= 200; ++i) {
    cell.publish(std::make_unique<const tracked>(i, live));
  }
  EXPECT_EQ(live.load(), 2) << "the pinned value and the current one";
  EXPECT_EQ(cell.retired_count(), 1u);
  EXPECT_EQ(stuck.value->value, 0);
  // A second stuck reader, in the middle: three values alive, whatever follows.
  const auto second = cell.acquire();
  for (int i = 201; i <= 400; ++i) {
    cell.publish(std::make_unique<const tracked>(i, live));
  }
  EXPECT_EQ(live.load(), 3);
  EXPECT_EQ(second.value->value, 200);
  cell.release(stuck.stripe, stuck.slot);
  cell.release(second.stripe, second.slot);
  cell.reclaim();
  EXPECT_EQ(live.load(), 1);
  EXPECT_EQ(cell.retired_count(), 0u);
}

TEST(RcuCell, ConcurrentReadersAndPublishersNeverSeeAFreedValue) {
  std::atomic<int> live{0};
  rcu_cell<tracked> cell(std::make_unique<const tracked>(0, live));
  std::atomic<bool> stop{false};
  std::atomic<long> reads{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 3; ++i) {
    readers.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        const auto p = cell.acquire();
        EXPECT_GE(p.value->value, 0);
        EXPECT_EQ(&p.value->live_, &live);
        cell.release(p.stripe, p.slot);
        reads.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  // Keep publishing until the readers have overlapped with plenty of publications.
  for (int i = 1; i <= 2000 || reads.load() < 20000; ++i) {
    cell.publish(std::make_unique<const tracked>(i, live));
  }
  stop = true;
  for (auto& t : readers) t.join();
  cell.reclaim();
  cell.reclaim();
  EXPECT_EQ(live.load(), 1);
  EXPECT_GT(reads.load(), 0);
}

}  // namespace
}  // namespace floodgate::detail
