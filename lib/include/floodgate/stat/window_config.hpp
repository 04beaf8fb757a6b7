// The shape of every node's short sliding window (SPEC §2), fixed for an engine's life.
#pragma once

#include <cstdint>

namespace floodgate::stat {

/// Shape of a node's windows; the defaults are Sentinel's.
struct window_config {
  int second_sample_count = 2;           ///< buckets of the short window
  int second_interval_ms = 1000;         ///< length of the short window
  std::int64_t statistic_max_rt = 5000;  ///< minRt of an idle window (Sentinel's statisticMaxRt)
  friend bool operator==(const window_config&, const window_config&) = default;
};

}  // namespace floodgate::stat
