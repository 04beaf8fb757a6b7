// How a QPS threshold reads a sliding window, and when a blocked request may retry.
#pragma once

#include <floodgate/stat/statistic_node.hpp>

#include <cmath>
#include <cstdint>

namespace floodgate::flow {

/** Sentinel's QPS test `(int) passQps + acquire <= count`, with `passQps` the pass count of the
    sliding window divided by its length in seconds. */
inline bool qps_fits(std::uint64_t window_passes, std::uint32_t acquire, double count,
                     double interval_sec) noexcept {
  return std::floor(static_cast<double>(window_passes) / interval_sec) + acquire <= count;
}

/** Milliseconds until the oldest windows of `node`'s short interval have slid out far enough for
    `acquire` more passes to fit under `limit` (at least 1); the interval length when they never
    will. */
std::int64_t window_retry_after_ms(const stat::statistic_node& node, std::int64_t now_ms,
                                   std::uint32_t acquire, double limit) noexcept;

}  // namespace floodgate::flow
