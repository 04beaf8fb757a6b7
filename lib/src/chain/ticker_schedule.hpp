// When the steady clock's millisecond ticker runs: Sentinel's TimeUtil states, as a pure policy.
#pragma once

#include <chrono>
#include <cstdint>

namespace floodgate::detail {

/** Decides, step by step, whether the millisecond ticker behind steady_clock::now_ms() keeps
    refreshing its word.

    A running ticker wakes a thread every millisecond, which costs CPU whether or not anything
    reads the time (about 15 µs a wake-up on a small VM: 1.5 % of a core). Like Sentinel's
    TimeUtil, the ticker therefore runs only while reads are frequent:

    - **running**: the word holds the current millisecond, refreshed every 1 ms. Every
      `probe_every` ticks the ticker probes: it marks the word idle for `probe_window`.
    - **probing / idle**: readers that find the word idle read CLOCK_MONOTONIC themselves and
      count themselves. A probe that counts `keep_reads` or more (800 a second) goes back to
      running; otherwise the ticker idles, looks at the count every `idle_poll`, and resumes
      when it reaches `resume_reads` (1000 a second) — the gap between the two is hysteresis.

    The thread (clock.cpp) sleeps for `step::sleep`, swaps the count to zero and passes it to
    next(). Kept apart from the thread so tests can drive it without sleeping.
*/
class ticker_schedule {
 public:
  enum class state { running, probing, idle };

  struct step {
    state next;                       ///< the state to be in until the next call
    std::chrono::milliseconds sleep;  ///< how long to sleep before calling next() again
  };

  static constexpr int probe_every = 1000;  ///< running ticks between probes (1 s)
  static constexpr std::chrono::milliseconds tick{1};
  static constexpr std::chrono::milliseconds probe_window{5};
  static constexpr std::chrono::milliseconds idle_poll{10};
  static constexpr std::uint64_t keep_reads = 4;     ///< in probe_window: 800 reads a second
  static constexpr std::uint64_t resume_reads = 10;  ///< in idle_poll: 1000 reads a second

  /// The first step: the ticker starts running (whoever starts it is about to read it).
  static constexpr step start() noexcept { return {state::running, tick}; }

  /** The step after a sleep; `idle_reads` is how many reads found the word idle since the last
      call (none while running). */
  step next(std::uint64_t idle_reads) noexcept {
    switch (state_) {
      case state::running:
        if (++ticks_ < probe_every) {
          return {state::running, tick};
        }
        ticks_ = 0;
        return enter(state::probing, probe_window);
      case state::probing:
        return idle_reads >= keep_reads ? enter(state::running, tick)
                                        : enter(state::idle, idle_poll);
      case state::idle:
        return idle_reads >= resume_reads ? enter(state::running, tick)
                                          : enter(state::idle, idle_poll);
    }
    return enter(state::running, tick);
  }

  state current() const noexcept { return state_; }

 private:
  step enter(state s, std::chrono::milliseconds sleep) noexcept {
    state_ = s;
    return {s, sleep};
  }

  state state_ = state::running;
  int ticks_ = 0;
};

}  // namespace floodgate::detail
