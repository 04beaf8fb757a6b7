// Time sources for the engine: every window, breaker and controller reads time through a clock.
#pragma once

#include <atomic>
#include <cstdint>

namespace floodgate {

/** A monotonic time source in nanoseconds.

    All of floodgate's time comes from a clock passed to the engine, so tests drive windows,
    breakers and controllers with a @ref manual_clock and never sleep.

    @par Thread Safety
    Implementations must be safe to call from any number of threads at once.
*/
class clock {
 public:
  virtual ~clock() = default;

  /// Nanoseconds since an arbitrary fixed origin; never decreases for a steady source.
  virtual std::int64_t now_ns() const noexcept = 0;

  /** Milliseconds on the same scale as now_ns() / 1e6. This is what windows, response times and
      breakers use, so a clock may serve it from a cheaper source. */
  virtual std::int64_t now_ms() const noexcept { return now_ns() / 1'000'000; }
};

/** The production clock: CLOCK_MONOTONIC.

    now_ns() reads CLOCK_MONOTONIC through the vDSO. now_ms() is one atomic load of a value a
    background ticker refreshes every millisecond: every entry and exit reads it, so it must
    cost nothing next to the counters. Like Sentinel's TimeUtil, the ticker runs only while
    reads are frequent: once a second it checks for at least 800 reads a second, and otherwise
    idles (waking 100 times a second instead of 1000) while now_ms() reads CLOCK_MONOTONIC
    itself, until reads pass 1000 a second again. Entries with a precise duration take their
    milliseconds from their nanosecond reading and do not count. The ticker thread starts on
    first use and stops at process exit. A process-wide instance is returned by
    @ref default_clock.
*/
class steady_clock final : public clock {
 public:
  std::int64_t now_ns() const noexcept override;
  std::int64_t now_ms() const noexcept override;
};

/// The shared steady clock used when none is given.
const clock& default_clock() noexcept;

/** A clock that moves only when told to; for tests.

    Starts at the given millisecond. @par Thread Safety Safe to read and advance concurrently.
*/
class manual_clock final : public clock {
 public:
  explicit manual_clock(std::int64_t start_ms = 1'000'000) noexcept : ns_(start_ms * 1'000'000) {}

  std::int64_t now_ns() const noexcept override { return ns_.load(std::memory_order_acquire); }

  void set_ms(std::int64_t ms) noexcept { ns_.store(ms * 1'000'000, std::memory_order_release); }
  void advance_ms(std::int64_t ms) noexcept { ns_.fetch_add(ms * 1'000'000, std::memory_order_acq_rel); }
  void advance_ns(std::int64_t ns) noexcept { ns_.fetch_add(ns, std::memory_order_acq_rel); }

 private:
  std::atomic<std::int64_t> ns_;
};

}  // namespace floodgate
