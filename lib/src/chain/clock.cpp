#include <floodgate/chain/clock.hpp>

#include "chain/ticker_schedule.hpp"

#include <time.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace floodgate {

namespace {

std::int64_t monotonic_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::chrono::nanoseconds{std::chrono::seconds{ts.tv_sec}}.count() + ts.tv_nsec;
}

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

std::int64_t steady_clock::now_ns() const noexcept { return monotonic_ns(); }

std::int64_t steady_clock::now_ms() const noexcept {
  static const millisecond_ticker& t = ticker();
  return t.now_ms();
}

namespace detail {
const std::atomic<std::int64_t>* steady_millisecond_word(const clock& c) noexcept {
  if (dynamic_cast<const steady_clock*>(&c) == nullptr) {
    return nullptr;
  }
  return &ticker().word();
}

std::int64_t steady_ms_while_idle() noexcept { return ticker().read_while_idle(); }
}  // namespace detail

const clock& default_clock() noexcept {
  static const steady_clock instance;
  return instance;
}

}  // namespace floodgate
