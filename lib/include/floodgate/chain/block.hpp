// What a blocked entry carries: why, which rule, and when to retry.
#pragma once

#include <floodgate/chain/param_value.hpp>

#include <chrono>
#include <cstdint>
#include <string_view>

namespace floodgate {

/// Why an entry was blocked; `custom` is a user slot.
enum class block_reason : std::uint8_t { flow, param_flow, degrade, system, authority, custom };
inline constexpr std::size_t block_reason_count = 6;

/// Which system limit tripped (Sentinel's SystemBlockException limitType).
enum class system_limit : std::uint8_t { none, qps, thread, rt, load, cpu };

/** The outcome of a blocked entry. Plain value, safe to keep after the rules change. */
struct block_info {
  block_reason reason = block_reason::flow;
  /// Index of the blocking rule in its section of the rule set (`flow[2]` → 2); -1 for none.
  std::int32_t rule_index = -1;
  system_limit limit = system_limit::none;
  /// Time until retrying may succeed: a slot frees in the window, the queue has room, or the
  /// breaker lets its next probe through. Zero when unknown.
  std::chrono::milliseconds retry_after{0};
  /// What was refused: the origin (authority) or the parameter value (param_flow). It refers to
  /// the caller's own characters (the context's origin, the entry's arguments or request), so
  /// it is valid as long as those are.
  param_value subject{};
};

/// `flow`, `param_flow`, `degrade`, `system`, `authority` or `custom`.
std::string_view to_string(block_reason r) noexcept;
/// `qps`, `thread`, `rt`, `load`, `cpu`, or empty.
std::string_view to_string(system_limit l) noexcept;

}  // namespace floodgate
