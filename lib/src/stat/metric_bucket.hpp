// The buckets a statistic node keeps in its windows.
#pragma once

#include "stat/tagged_cell.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace floodgate::stat {

/// Events counted per window (Sentinel's MetricEvent, plus the minimum RT).
enum class metric_event : std::uint8_t { pass, block, success, exception, rt, occupied_pass };
inline constexpr std::size_t metric_event_count = 6;

/** One bucket of the one-second window: every event, the minimum RT and a concurrency word, on
    one cache line so a request touches a single line per node.

    The words are ordered so that what one request writes together is one aligned 16-byte pair,
    which a CPU shard's writer updates in one restartable sequence committed by a single 16-byte
    store (writer_shard.hpp, add_pair_on_cpu): an entry's pass with its +1 in flight (words 0-1),
    an exit's success with its RT (words 2-3).

    The concurrency word is not windowed: a shard's live concurrency is the sum of its ring's
    concurrency words (an entry adds 1 to the word of its bucket, an exit subtracts 1 from the
    word of its own; two's complement, summed modulo 2^64). */
struct alignas(64) second_bucket {
  static constexpr std::size_t word_count = 8;
  static constexpr std::size_t pass_word = 0;
  static constexpr std::size_t concurrency_word = 1;
  static constexpr std::size_t success_word = 2;
  static constexpr std::size_t rt_word = 3;
  static constexpr std::size_t block_word = 4;
  static constexpr std::size_t exception_word = 5;
  static constexpr std::size_t occupied_pass_word = 6;
  static constexpr std::size_t min_rt_word = 7;

  /// The word of event `e`'s tagged cell.
  static constexpr std::size_t word_of(metric_event e) noexcept {
    constexpr std::size_t words[metric_event_count] = {
        pass_word, block_word, success_word, exception_word, rt_word, occupied_pass_word};
    return words[static_cast<std::size_t>(e)];
  }

  std::atomic<std::uint64_t> words[word_count] = {};

  std::atomic<std::uint64_t>& cell(metric_event e) noexcept { return words[word_of(e)]; }
  const std::atomic<std::uint64_t>& cell(metric_event e) const noexcept {
    return words[word_of(e)];
  }
  std::atomic<std::uint64_t>& min_rt() noexcept { return words[min_rt_word]; }
  const std::atomic<std::uint64_t>& min_rt() const noexcept { return words[min_rt_word]; }
  /// This bucket's share of its shard's concurrency (see above; read as a signed sum).
  std::atomic<std::uint64_t>& concurrency() noexcept { return words[concurrency_word]; }
  const std::atomic<std::uint64_t>& concurrency() const noexcept {
    return words[concurrency_word];
  }

  std::uint64_t value(metric_event e, std::uint64_t tag) const noexcept {
    return cell_value(cell(e).load(std::memory_order_relaxed), tag);
  }
  void add(metric_event e, std::uint64_t tag, std::uint64_t n) noexcept { cell_add(cell(e), tag, n); }
};
static_assert(sizeof(second_bucket) == 64);

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
