#include <floodgate/core/clock.hpp>

#include <time.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace floodgate {

namespace {

std::int64_t monotonic_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/// Refreshes a cached millisecond reading every millisecond until the process exits.
class millisecond_ticker {
 public:
  millisecond_ticker() : ms_(monotonic_ns() / 1'000'000), thread_([this] { run(); }) {}
  ~millisecond_ticker() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  std::int64_t now_ms() const noexcept { return ms_.load(std::memory_order_relaxed); }
  const std::atomic<std::int64_t>& word() const noexcept { return ms_; }

 private:
  void run() {
    std::unique_lock lock(mu_);
    while (!stop_) {
      ms_.store(monotonic_ns() / 1'000'000, std::memory_order_relaxed);
      cv_.wait_for(lock, std::chrono::milliseconds(1));
    }
  }

  std::atomic<std::int64_t> ms_;
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
}  // namespace detail

const clock& default_clock() noexcept {
  static const steady_clock instance;
  return instance;
}

}  // namespace floodgate
