// Time sources for the engine: every window, breaker and controller reads time through a clock.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace floodgate {

/// Milliseconds on the clocks' integer scale in nanoseconds.
constexpr std::int64_t ms_to_ns(std::int64_t ms) noexcept {
  return std::chrono::nanoseconds{std::chrono::milliseconds{ms}}.count();
}
/// Nanoseconds in whole milliseconds (toward zero, as integer division).
constexpr std::int64_t ns_to_ms(std::int64_t ns) noexcept {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::nanoseconds{ns}).count();
}
/// Nanoseconds in milliseconds, rounded up: a wait of 1 ns is 1 ms.
constexpr std::int64_t ns_to_ms_ceil(std::int64_t ns) noexcept {
  return std::chrono::ceil<std::chrono::milliseconds>(std::chrono::nanoseconds{ns}).count();
}

/** A monotonic time source in nanoseconds.

    All of floodgate's time comes from a clock passed to the engine, so tests drive windows,
    breakers and controllers with a @ref manual_clock and never sleep.

    @par Thread Safety
    Implementations must be safe to call from any number of threads at once.
*/
class clock {
 public:
  virtual ~clock() = default;

  /// Nanoseconds since an arbitrary fixed origin; never decreases for a steady source. The
  /// engine reads a time before the origin (below 0) as 0.
  virtual std::int64_t now_ns() const noexcept = 0;

  /** Milliseconds on the same scale as now_ns() / 1e6. This is what windows, response times and
      breakers use, so a clock may serve it from a cheaper source. */
  virtual std::int64_t now_ms() const noexcept { return ns_to_ms(now_ns()); }
};

/** The production clock: CLOCK_MONOTONIC, shifted to start its seconds with the wall clock's.

    now_ns() is CLOCK_MONOTONIC plus a constant (how far it was behind CLOCK_REALTIME at
    start-up, modulo a day), so the windows counted on it begin their half-seconds, seconds
    and minutes when the wall clock does, as Sentinel's (on System.currentTimeMillis) do: the
    passes of a wall-clock second fall in one window (until the wall clock is stepped). On
    x86-64 with an invariant TSC that the kernel itself uses as its clocksource, extrapolated from the TSC (one `rdtsc`, re-anchored on CLOCK_MONOTONIC once
    a second, typically within a microsecond of it; a re-anchor that finds it over a millisecond
    off, after a TSC jump or a badly timed calibration, calibrates again and reads
    CLOCK_MONOTONIC meanwhile; a thread's readings never decrease but at such a restart), else
    read through the vDSO. now_ms() is one atomic load of a value a
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
  explicit manual_clock(std::int64_t start_ms = 1'000'000) noexcept : ns_(ms_to_ns(start_ms)) {}

  std::int64_t now_ns() const noexcept override { return ns_.load(std::memory_order_acquire); }

  void set_ms(std::int64_t ms) noexcept { ns_.store(ms_to_ns(ms), std::memory_order_release); }
  void advance_ms(std::int64_t ms) noexcept { ns_.fetch_add(ms_to_ns(ms), std::memory_order_acq_rel); }
  void advance_ns(std::int64_t ns) noexcept { ns_.fetch_add(ns, std::memory_order_acq_rel); }

 private:
  std::atomic<std::int64_t> ns_;
};

}  // namespace floodgate
