// The buckets a statistic node keeps in its windows.
#pragma once

#include "stat/tagged_cell.hpp"

#include <atomic>
#include <cstdint>

namespace floodgate::stat {

/// Events counted per window (Sentinel's MetricEvent, plus the minimum RT).
enum class metric_event : std::uint8_t { pass, block, success, exception, rt, occupied_pass };
inline constexpr std::size_t metric_event_count = 6;

/** One bucket of the one-second window: every event plus the minimum RT, on one cache line so
    a request touches a single line per node. */
struct alignas(64) second_bucket {
  std::atomic<std::uint64_t> cells[metric_event_count] = {};
  std::atomic<std::uint64_t> min_rt = 0;
  /// Not windowed: in the first bucket of each writer shard's ring, that shard's live
  /// concurrency (the line the shard's own writes touch anyway); unused in the others.
  std::atomic<std::int64_t> concurrency = 0;

  std::uint64_t value(metric_event e, std::uint64_t tag) const noexcept {
    return cell_value(cells[static_cast<std::size_t>(e)].load(std::memory_order_relaxed), tag);
  }
  void add(metric_event e, std::uint64_t tag, std::uint64_t n) noexcept {
    cell_add(cells[static_cast<std::size_t>(e)], tag, n);
  }
};

/** One bucket of the one-minute window: pass, block, success and exception. RT and occupied
    passes are kept in the short window only (no reader needs them per minute), which keeps a
    node near 3 KB. */
struct minute_bucket {
  static constexpr std::size_t events = 4;
  std::atomic<std::uint64_t> cells[events] = {};

  static constexpr std::size_t index(metric_event e) noexcept {
    return static_cast<std::size_t>(e);
  }
  std::uint64_t value(metric_event e, std::uint64_t tag) const noexcept {
    return cell_value(cells[index(e)].load(std::memory_order_relaxed), tag);
  }
  void add(metric_event e, std::uint64_t tag, std::uint64_t n) noexcept {
    cell_add(cells[index(e)], tag, n);
  }
};

/// A single-counter bucket: the future ("borrowed") passes of prioritized requests.
struct waiting_bucket {
  std::atomic<std::uint64_t> pass = 0;
};

}  // namespace floodgate::stat
