#include <floodgate/chain/clock.hpp>

#include "chain/clock_offset.hpp"
#include "chain/tick_extrapolator.hpp"
#include "chain/ticker_schedule.hpp"

#include <time.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <limits>
#include <mutex>
#include <string>
#include <thread>

namespace floodgate {

namespace {

std::int64_t read_ns(clockid_t id) noexcept {
  timespec ts{};
  ::clock_gettime(id, &ts);
  return std::chrono::nanoseconds{std::chrono::seconds{ts.tv_sec}}.count() + ts.tv_nsec;
}

/** How far CLOCK_MONOTONIC was behind the wall clock when the process started, modulo a day.
    Every reading adds it, so the steady clock's half-seconds, seconds and minutes begin when
    the wall clock's do, and so do the windows counted on them: a client counting requests per
    wall-clock second sees each second's passes in one window (as Sentinel's windows, on
    System.currentTimeMillis, are), not split across two that could each pass the count. Both
    clocks move at the rate NTP sets, so they stay in step until the wall clock is stepped. */
std::int64_t wall_alignment_ns() noexcept {
  static const std::int64_t offset = [] {
    // Of a few tries, the wall reading taken between the two monotonic ones closest together.
    std::int64_t best_gap = std::numeric_limits<std::int64_t>::max();
    std::int64_t difference = 0;
    for (int attempt = 0; attempt < 4; ++attempt) {
      const std::int64_t before = read_ns(CLOCK_MONOTONIC);
      const std::int64_t wall = read_ns(CLOCK_REALTIME);
      const std::int64_t after = read_ns(CLOCK_MONOTONIC);
      if (after - before < best_gap) {
        best_gap = after - before;
        difference = wall - (before + (after - before) / 2);
      }
    }
    constexpr std::int64_t day_ns = std::int64_t{86'400} * 1'000'000'000;
    return (difference % day_ns + day_ns) % day_ns;
  }();
  return offset;
}

std::int64_t monotonic_ns() noexcept { return read_ns(CLOCK_MONOTONIC) + wall_alignment_ns(); }

#if defined(__x86_64__)
/** True if the time-stamp counter can stand in for CLOCK_MONOTONIC: the CPU says its TSC is
    invariant (constant rate in every P- and C-state), and the kernel's own clocksource is the
    TSC, which means it found the counters of all CPUs in step (and on a VM, that the host keeps
    them so). Anything else (no sysfs, another clocksource) keeps the vDSO. */
bool tsc_stands_in() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx) == 0 || (edx & (1u << 8)) == 0) {
    return false;
  }
  std::ifstream source("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string name;
  return static_cast<bool>(source >> name) && name == "tsc";
}

/// The process's extrapolation of CLOCK_MONOTONIC from the TSC.
detail::tick_extrapolator tsc_extrapolation;

std::int64_t precise_ns() noexcept {
  // Null where the TSC cannot stand in; decided once.
  static detail::tick_extrapolator* const tsc = tsc_stands_in() ? &tsc_extrapolation : nullptr;
  if (tsc == nullptr) {
    return monotonic_ns();
  }
  const std::int64_t ns = tsc->now(__rdtsc(), [] {
    // The tick count at the middle of the reference read; of four tries, the one the scheduler
    // interrupted least (a preempted read would pin the reference to the wrong tick).
    detail::tick_extrapolator::sample best;
    std::uint64_t narrowest = ~std::uint64_t{0};
    for (int attempt = 0; attempt < 4; ++attempt) {
      const std::uint64_t before = __rdtsc();
      const std::int64_t reference = monotonic_ns();
      const std::uint64_t after = __rdtsc();
      if (after - before < narrowest) {
        narrowest = after - before;
        best = {before + (after - before) / 2, reference};
      }
    }
    return best;
  });
  // A thread that read the old anchor just after a re-anchor's reference read can be a few
  // nanoseconds ahead of the new anchor (whose rate is slewed): its next reading must not be
  // behind its last, as CLOCK_MONOTONIC's never is. A larger step back is the one a counter
  // jump causes (max_drift_ns): holding the clock still until it caught up would freeze it.
  static thread_local std::int64_t last = 0;
  if (ns >= last || last - ns > detail::tick_extrapolator::max_drift_ns) {
    last = ns;
  }
  return last;
}
#else
std::int64_t precise_ns() noexcept { return monotonic_ns(); }
#endif

/// What the ticker's word holds while it is not refreshed: readers read the clock themselves.
constexpr std::int64_t idle_word = -1;

/** Refreshes a cached millisecond reading every millisecond while reads are frequent, and lets
    readers read CLOCK_MONOTONIC themselves otherwise (detail::ticker_schedule). */
class millisecond_ticker {
 public:
  millisecond_ticker() : ms_(ns_to_ms(monotonic_ns())), thread_([this] { run(); }) {}
  ~millisecond_ticker() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  std::int64_t now_ms() const noexcept {
    const std::int64_t ms = ms_.load(std::memory_order_relaxed);
    return ms != idle_word ? ms : read_while_idle();
  }
  const std::atomic<std::int64_t>& word() const noexcept { return ms_; }

  /// A read that found the word idle: counted, so the ticker knows to run again.
  std::int64_t read_while_idle() const noexcept {
    idle_reads_.fetch_add(1, std::memory_order_relaxed);
    return ns_to_ms(monotonic_ns());
  }

 private:
  void run() {
    detail::ticker_schedule schedule;
    detail::ticker_schedule::step step = detail::ticker_schedule::start();
    std::unique_lock lock(mu_);
    while (!stop_) {
      ms_.store(step.next == detail::ticker_schedule::state::running ? ns_to_ms(monotonic_ns())
                                                                     : idle_word,
                std::memory_order_relaxed);
      cv_.wait_for(lock, step.sleep);
      step = schedule.next(idle_reads_.exchange(0, std::memory_order_relaxed));
    }
  }

  alignas(64) std::atomic<std::int64_t> ms_;  // read by every entry: kept off the count's line
  alignas(64) mutable std::atomic<std::uint64_t> idle_reads_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

const millisecond_ticker& ticker() {
  static const millisecond_ticker instance;
  return instance;
}

}  // namespace

std::int64_t steady_clock::now_ns() const noexcept { return precise_ns(); }

std::int64_t steady_clock::now_ms() const noexcept {
  static const millisecond_ticker& t = ticker();
  return t.now_ms();
}

namespace detail {
const std::atomic<std::int64_t>* steady_millisecond_word(const clock& c) noexcept {
  if (dynamic_cast<const steady_clock*>(&c) == nullptr) {
    return nullptr;
  }
  (void)precise_ns();  // decides here, not on a request, whether the TSC stands in
  return &ticker().word();
}

std::int64_t steady_ms_while_idle() noexcept { return ticker().read_while_idle(); }
std::int64_t steady_clock_offset_ns() noexcept { return wall_alignment_ns(); }
std::int64_t steady_now_ns() noexcept { return precise_ns(); }
}  // namespace detail

const clock& default_clock() noexcept {
  static const steady_clock instance;
  return instance;
}

}  // namespace floodgate
