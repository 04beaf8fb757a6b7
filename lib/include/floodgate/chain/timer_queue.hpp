// Delayed callbacks on an injectable clock: the timers of the control plane and of throttling.
#pragma once

#include <floodgate/chain/clock.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <utility>

namespace floodgate {

/** Runs callbacks after a delay, on a clock of its own.

    The rule-file watcher (debounce, poll) and the Beast guard (a throttled request's wait) take
    one in their options. Left null they use Asio steady timers on their executor; tests give them
    a @ref manual_timer_queue and move a @ref manual_clock, so nothing waits on real time.

    @par Thread Safety
    Implementations must be safe to call from any thread. A callback may run on any thread and
    must not call back into the queue's own run loop.
*/
class timer_queue {
 public:
  using callback = std::function<void()>;
  using handle = std::uint64_t;

  virtual ~timer_queue() = default;

  /// The queue's time, in the scale of its delays.
  virtual std::chrono::nanoseconds now() const noexcept = 0;
  /// Runs `f` once `delay` has passed. Returns a handle for cancel().
  virtual handle schedule(std::chrono::nanoseconds delay, callback f) = 0;
  /// Drops a callback that has not run yet; false when it ran already (or never existed).
  virtual bool cancel(handle h) = 0;
};

/** A timer queue driven by a manual_clock, for tests: callbacks run only in run_due(), on the
    calling thread, once the clock has reached their time.

    @par Example
    @code
    floodgate::manual_clock time;
    floodgate::manual_timer_queue timers{time};
    opts.timers = &timers;
    time.advance_ms(100);
    timers.run_due();
    @endcode
*/
class manual_timer_queue final : public timer_queue {
 public:
  explicit manual_timer_queue(const manual_clock& time) noexcept : time_(&time) {}

  std::chrono::nanoseconds now() const noexcept override {
    return std::chrono::nanoseconds{time_->now_ns()};
  }

  handle schedule(std::chrono::nanoseconds delay, callback f) override {
    std::lock_guard lock(mutex_);
    const handle h = ++last_;
    due_.emplace(std::pair{now() + delay, h}, std::move(f));
    return h;
  }

  bool cancel(handle h) override {
    std::lock_guard lock(mutex_);
    for (auto it = due_.begin(); it != due_.end(); ++it) {
      if (it->first.second == h) {
        due_.erase(it);
        return true;
      }
    }
    return false;
  }

  /// Runs, in time order, every callback due at the clock's time; returns how many ran.
  std::size_t run_due() {
    std::size_t ran = 0;
    while (true) {
      callback f;
      {
        std::lock_guard lock(mutex_);
        if (due_.empty() || due_.begin()->first.first > now()) break;
        f = std::move(due_.begin()->second);
        due_.erase(due_.begin());
      }
      f();  // outside the lock: it may schedule again
      ++ran;
    }
    return ran;
  }

  /// Callbacks scheduled so far (run, cancelled or pending): tells a test that one was scheduled.
  std::uint64_t scheduled() const {
    std::lock_guard lock(mutex_);
    return last_;
  }

  /// Callbacks scheduled and not yet run or cancelled.
  std::size_t pending() const {
    std::lock_guard lock(mutex_);
    return due_.size();
  }

 private:
  const manual_clock* time_;
  mutable std::mutex mutex_;
  handle last_ = 0;
  std::map<std::pair<std::chrono::nanoseconds, handle>, callback> due_;
};

}  // namespace floodgate
