// CLOCK_MONOTONIC from the CPU's time-stamp counter: the steady clock's nanoseconds without a
// vDSO call, as a pure policy over two injected sources.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace floodgate::detail {

__extension__ typedef __int128 tick_wide;  // products of a tick count and a 32.32 rate

/** Extrapolates a reference clock (CLOCK_MONOTONIC, in nanoseconds) from a tick counter that
    runs at a constant rate (the time-stamp counter of a CPU with an invariant TSC).

    Why: an entry with a precise duration reads the clock twice, and in a server those two
    reads were 0.5 % of a request's time — a call into the vDSO, a sequence lock and an `lfence`
    that waits for every load in flight (the request path's cache misses included). A tick read
    is one instruction that waits for nothing.

    How: the first reads go to the reference (through `read_reference`, which returns a
    reference reading with the tick count at that moment). Once `calibration_ns` of reference
    time separate the first sample from the current one, the rate is known and reads
    extrapolate: `ns = anchor_ns + (ticks - anchor_ticks) × rate`. The first read past
    `refresh_ns` of the anchor re-anchors: it reads the reference again, measures the rate over
    everything since the first sample (a longer baseline every time: the rate's error falls
    with it), and starts the new anchor where the old extrapolation was, never behind it; its
    rate is slewed so that it meets the reference one period later. So readings do not step
    back at a re-anchor, and stay within the rate's error over one period of CLOCK_MONOTONIC
    (the reference's jitter over the baseline: microseconds in the first second, less later).
    A re-anchor that finds the extrapolation more than max_drift_ns off (a counter that jumped,
    or a rate from a sample the scheduler stretched) calibrates again from the reference.

    Readers never wait: the anchor sits in one of two slots under a version counter (a reader
    retries only if a re-anchor published during its read, once a second at most), and one
    reader at a time re-anchors while the others keep extrapolating from the current slot.
    No allocation, no lock, no syscall besides the reference reads (a few per second).

    @par Thread Safety
    now() may be called from any number of threads at once.
*/
class tick_extrapolator {
 public:
  /// A reference reading and the tick count at the moment of it.
  struct sample {
    std::uint64_t ticks = 0;
    std::int64_t ns = 0;
  };

  /// Reference time between the first sample and the one that fixes the first rate.
  static constexpr std::int64_t calibration_ns = 10'000'000;
  /// Reference time an anchor serves before a read re-anchors.
  static constexpr std::int64_t refresh_ns = 1'000'000'000;
  /** A re-anchor that finds the extrapolation this far from the reference calibrates again,
      answering the reference meanwhile (the only step back a reading can take): the error of
      a sound rate (microseconds a second) never comes near it; a suspended or migrated
      counter, or a rate from a stretched calibration sample, does. */
  static constexpr std::int64_t max_drift_ns = 1'000'000;

  /** Nanoseconds at tick count `ticks` (the caller's counter read, just taken).
      `read_reference()` returns a fresh sample; it is called before calibration and for
      re-anchoring only. */
  template <class Reference>
  std::int64_t now(std::uint64_t ticks, Reference&& read_reference) noexcept {
    anchor a;
    if (!load(a) || a.rate == 0) [[unlikely]] {
      return calibrate(read_reference());
    }
    const std::int64_t elapsed = static_cast<std::int64_t>(ticks - a.ticks);
    const std::int64_t ns = a.at(elapsed);
    if (elapsed >= a.period_ticks || ns < a.ns - max_drift_ns) [[unlikely]] {
      // Past the anchor's period, or a count far before the anchor (a counter that went back;
      // a reader that raced a publication is nanoseconds before it): re-anchor (this reader or
      // another), and answer from the anchor in force after that.
      reanchor(read_reference);
      anchor b;
      if (!load(b) || b.rate == 0) {
        return calibrate(read_reference());  // the re-anchor started calibration over
      }
      return b.at(static_cast<std::int64_t>(ticks - b.ticks));
    }
    return ns;
  }

  /// True once reads extrapolate (the first rate is known).
  bool calibrated() const noexcept {
    anchor a;
    return load(a) && a.rate != 0;
  }

 private:
  /// Fixed-point rate: nanoseconds per tick, scaled by 2^32.
  static constexpr int rate_shift = 32;

  struct anchor {
    std::uint64_t ticks = 0;
    std::int64_t ns = 0;
    std::uint64_t rate = 0;         // 0: not calibrated
    std::int64_t period_ticks = 0;  // ticks this anchor serves (refresh_ns; the first, a tenth)

    /// Nanoseconds `elapsed` ticks after the anchor (negative for a count read before it).
    std::int64_t at(std::int64_t elapsed) const noexcept {
      const tick_wide scaled = static_cast<tick_wide>(elapsed) * static_cast<tick_wide>(rate);
      return ns + static_cast<std::int64_t>(scaled >> rate_shift);
    }
  };

  struct slot {
    std::atomic<std::uint64_t> ticks{0};
    std::atomic<std::int64_t> ns{0};
    std::atomic<std::uint64_t> rate{0};
    std::atomic<std::int64_t> period_ticks{0};
  };

  /// Reads the anchor in force; false if none is published yet (or a reader kept losing races
  /// against re-anchors, which publish once a second: it then reads the reference instead).
  bool load(anchor& out) const noexcept {
    for (int attempt = 0; attempt < 4; ++attempt) {
      const std::uint64_t v = version_.load(std::memory_order_acquire);
      if (v == 0) {
        return false;
      }
      const slot& s = slots_[v & 1];
      out.ticks = s.ticks.load(std::memory_order_relaxed);
      out.ns = s.ns.load(std::memory_order_relaxed);
      out.rate = s.rate.load(std::memory_order_relaxed);
      out.period_ticks = s.period_ticks.load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (version_.load(std::memory_order_relaxed) == v) {
        return true;  // the slot is rewritten only two publications after `v`
      }
    }
    return false;
  }

  /// Writes the slot readers do not use and makes it the one in force. Writer role held.
  void publish(const anchor& a) noexcept {
    const std::uint64_t v = version_.load(std::memory_order_relaxed);
    slot& s = slots_[(v + 1) & 1];
    s.ticks.store(a.ticks, std::memory_order_relaxed);
    s.ns.store(a.ns, std::memory_order_relaxed);
    s.rate.store(a.rate, std::memory_order_relaxed);
    s.period_ticks.store(a.period_ticks, std::memory_order_relaxed);
    version_.store(v + 1, std::memory_order_release);
  }

  /// The fixed-point rate between two samples; 0 if the ticks did not advance.
  static std::uint64_t rate_between(const sample& from, const sample& to) noexcept {
    if (to.ticks <= from.ticks || to.ns <= from.ns) {
      return 0;
    }
    const tick_wide ns = static_cast<tick_wide>(to.ns - from.ns) << rate_shift;
    return static_cast<std::uint64_t>(ns / static_cast<tick_wide>(to.ticks - from.ticks));
  }

  static std::int64_t ticks_for(std::int64_t ns, std::uint64_t rate) noexcept {
    return static_cast<std::int64_t>((static_cast<tick_wide>(ns) << rate_shift) /
                                     static_cast<tick_wide>(rate));
  }

  // calibrate() and reanchor() are cold and out of line: inlined, their 128-bit divisions made
  // the reading function 1.3 KB, spreading its few hot instructions over more cache lines.

  /// Before the first rate: answers the reference and, once the baseline is long enough,
  /// publishes the first anchor at this very sample (so the switch is seamless).
  [[gnu::cold, gnu::noinline]] std::int64_t calibrate(const sample& now) noexcept {
    if (!writing_.exchange(true, std::memory_order_acquire)) {
      if (!first_taken_) {
        first_ = now;
        first_taken_ = true;
      } else if (now.ns - first_.ns >= calibration_ns) {
        if (const std::uint64_t rate = rate_between(first_, now); rate != 0) {
          // The first rate comes from a short baseline: its anchor serves a tenth of a period,
          // so the error it gathers stays under a microsecond.
          publish({now.ticks, now.ns, rate, ticks_for(refresh_ns / 10, rate)});
        }
      }
      writing_.store(false, std::memory_order_release);
    }
    return now.ns;
  }

  /// One reader re-anchors; the others (and this one) answer from the anchor they read.
  template <class Reference>
  [[gnu::cold, gnu::noinline]] void reanchor(Reference& read_reference) noexcept {
    if (writing_.exchange(true, std::memory_order_acquire)) {
      return;
    }
    anchor a;
    if (load(a) && a.rate != 0) {
      const sample now = read_reference();
      const std::uint64_t rate = rate_between(first_, now);
      const std::int64_t extrapolated = a.at(static_cast<std::int64_t>(now.ticks - a.ticks));
      if (extrapolated - now.ns > max_drift_ns || now.ns - extrapolated > max_drift_ns) {
        // The counter jumped against the reference (a suspend, a migration that moved the
        // counter), or the rate was wrong (a calibration sample the scheduler stretched): a
        // slew cannot absorb that. Calibrate again from this sample; until then, readings are
        // the reference's.
        first_ = now;
        publish({now.ticks, now.ns, 0, 0});
      } else if (rate != 0) {
        // Start where the extrapolation is (never behind it), and aim at the reference one
        // period later: the slewed rate absorbs whatever the old one gained or lost.
        const std::int64_t start = std::max(extrapolated, now.ns);
        const std::int64_t period_ticks = ticks_for(refresh_ns, rate);
        const std::int64_t aim = now.ns + refresh_ns - start;  // ns to cover in one period
        const std::uint64_t slewed =
            aim <= 0 ? rate / 2
                     : static_cast<std::uint64_t>((static_cast<tick_wide>(aim) << rate_shift) /
                                                  period_ticks);
        publish({now.ticks, start, std::clamp(slewed, rate / 2, rate * 2), period_ticks});
      }
    }
    writing_.store(false, std::memory_order_release);
  }

  std::atomic<std::uint64_t> version_{0};  // slots_[version_ & 1] is in force; 0: none yet
  slot slots_[2];
  std::atomic<bool> writing_{false};  // one calibrating or re-anchoring reader at a time
  sample first_;                      // the first reference sample (written under writing_)
  bool first_taken_ = false;          // guarded by writing_
};

}  // namespace floodgate::detail
