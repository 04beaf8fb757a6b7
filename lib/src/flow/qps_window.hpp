// How a QPS threshold reads a sliding window, and when a blocked request may retry.
#pragma once

#include "stat/statistic_node.hpp"

#include <cstdint>

namespace floodgate::flow {

/** Sentinel's QPS test `(int) passQps + acquire <= count`, with `passQps` the pass count of the
    sliding window divided by its length in seconds. The truncated quotient is computed exactly in
    integers (Sentinel divides doubles); for the usual one-second window it is the count itself. */
inline bool qps_fits(std::uint64_t window_passes, std::uint32_t acquire, double count,
                     std::int64_t interval_ms) noexcept {
  const std::uint64_t per_second =
      interval_ms == 1000 ? window_passes
                          : window_passes * 1000 / static_cast<std::uint64_t>(interval_ms);
  return static_cast<double>(per_second + acquire) <= count;
}

/** Milliseconds until the oldest windows of `node`'s short interval have slid out far enough for
    `acquire` more passes to fit under `limit` (at least 1); the interval length when they never
    will. */
std::int64_t window_retry_after_ms(const stat::statistic_node& node, std::int64_t now_ms,
                                   std::uint32_t acquire, double limit) noexcept;

}  // namespace floodgate::flow
