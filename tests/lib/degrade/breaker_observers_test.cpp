// The breaker observer list: registration order, isolation from a failing observer, and
// registering while request threads notify (run under ThreadSanitizer in CI).
#include <floodgate/degrade/circuit_breaker.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

namespace floodgate {
namespace {

const degrade_rule some_rule{.name = "r", .resource = "res"};

TEST(BreakerObservers, AnObserverSeesOnlyTransitionsAfterItWasAdded) {
  breaker_observers observers;
  observers.notify(breaker_state::closed, breaker_state::open, some_rule, 0.5);  // nobody yet
  std::vector<breaker_state> seen;
  observers.add([&seen](breaker_state, breaker_state to, const degrade_rule&,
                        std::optional<double>) { seen.push_back(to); });
  observers.notify(breaker_state::open, breaker_state::half_open, some_rule, std::nullopt);
  EXPECT_EQ(seen, std::vector<breaker_state>{breaker_state::half_open});
}

TEST(BreakerObservers, CallsEveryObserverInRegistrationOrderWithTheTransition) {
  breaker_observers observers;
  std::vector<int> calls;
  for (int i = 0; i < 3; ++i) {
    observers.add([&calls, i](breaker_state from, breaker_state to, const degrade_rule& r,
                              std::optional<double> value) {
      EXPECT_EQ(from, breaker_state::closed);
      EXPECT_EQ(to, breaker_state::open);
      EXPECT_EQ(r.name, "r");
      EXPECT_EQ(value, 0.75);
      calls.push_back(i);
    });
  }
  observers.notify(breaker_state::closed, breaker_state::open, some_rule, 0.75);
  EXPECT_EQ(calls, (std::vector<int>{0, 1, 2}));
}

TEST(BreakerObservers, AThrowingObserverDoesNotStopTheOthers) {
  breaker_observers observers;
  int later = 0;
  observers.add([](auto, auto, const auto&, auto) { throw std::runtime_error("boom"); });
  observers.add([&](auto, auto, const auto&, auto) { ++later; });
  observers.notify(breaker_state::open, breaker_state::half_open, some_rule, std::nullopt);
  EXPECT_EQ(later, 1);
}

TEST(BreakerObservers, RegisteringWhileRequestThreadsNotifyIsRaceFree) {
  constexpr int observers_added = 64;
  breaker_observers observers;
  std::atomic<std::uint64_t> calls{0};
  std::atomic<bool> done{false};
  std::vector<std::jthread> notifiers;
  for (int t = 0; t < 2; ++t) {
    notifiers.emplace_back([&] {
      while (!done.load(std::memory_order_acquire)) {
        observers.notify(breaker_state::closed, breaker_state::open, some_rule, 1.0);
      }
    });
  }
  for (int i = 0; i < observers_added; ++i) {
    observers.add([&](auto, auto, const auto&, auto) {
      calls.fetch_add(1, std::memory_order_relaxed);
    });
  }
  done.store(true, std::memory_order_release);
  notifiers.clear();

  const std::uint64_t before = calls.load();
  observers.notify(breaker_state::closed, breaker_state::open, some_rule, 1.0);
  EXPECT_EQ(calls.load() - before, static_cast<std::uint64_t>(observers_added));
}

}  // namespace
}  // namespace floodgate
