// The breaker observer list: copy-on-write, so notifying never waits for a registration.
#include <floodgate/degrade/circuit_breaker.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace floodgate {

// Each add() publishes a new immutable list with one atomic store; notify() reads whichever list
// is current and never locks. Lists are not freed before the registry: a reader may still be
// walking an old one, and observers are registered a handful of times per engine (metrics,
// admin, tests), so keeping every published list costs O(n²) small objects for n observers.
struct breaker_observers::impl {
  using list = std::vector<breaker_observer>;

  std::mutex mutex;                               // serialises add()
  std::vector<std::unique_ptr<const list>> lists;  // every list ever published; guarded by mutex
  std::atomic<const list*> current{nullptr};
};

breaker_observers::breaker_observers() : impl_(std::make_unique<impl>()) {}
breaker_observers::~breaker_observers() = default;

void breaker_observers::add(breaker_observer observer) {
  const std::lock_guard lock(impl_->mutex);
  const impl::list* old = impl_->current.load(std::memory_order_relaxed);
  auto next = std::make_unique<impl::list>();
  next->reserve((old ? old->size() : 0) + 1);
  if (old) {
    *next = *old;
  }
  next->push_back(std::move(observer));
  impl_->lists.push_back(std::move(next));  // owned before it is published
  impl_->current.store(impl_->lists.back().get(), std::memory_order_release);
}

void breaker_observers::notify(breaker_state from, breaker_state to, const degrade_rule& rule,
                               std::optional<double> value) const noexcept {
  const impl::list* observers = impl_->current.load(std::memory_order_acquire);
  if (!observers) {
    return;
  }
  for (const breaker_observer& observer : *observers) {
    try {
      observer(from, to, rule, value);
    } catch (...) {
      // The request path never throws; a failing observer only loses its own notification.
    }
  }
}

}  // namespace floodgate
