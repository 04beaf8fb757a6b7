#include "chain/fresh_time.hpp"

#include <time.h>

namespace floodgate::detail {

std::int64_t fresh_ms(const clock& c) noexcept {
  if (&c != &default_clock()) {
    return c.now_ns() / 1'000'000;
  }
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

std::int64_t fresh_ms_lag() noexcept {
  static const std::int64_t lag = [] {
    timespec res{};
    ::clock_getres(CLOCK_MONOTONIC_COARSE, &res);
    const std::int64_t ns = static_cast<std::int64_t>(res.tv_sec) * 1'000'000'000 + res.tv_nsec;
    return (ns + 999'999) / 1'000'000;
  }();
  return lag;
}

}  // namespace floodgate::detail
