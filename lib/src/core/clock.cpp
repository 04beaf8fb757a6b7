#include <floodgate/core/clock.hpp>

#include <time.h>

namespace floodgate {

std::int64_t steady_clock::now_ns() const noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

const clock& default_clock() noexcept {
  static const steady_clock instance;
  return instance;
}

}  // namespace floodgate
