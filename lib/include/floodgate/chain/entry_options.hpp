#pragma once

#include <floodgate/chain/entry_type.hpp>
#include <floodgate/chain/param_value.hpp>

#include <cstdint>
#include <span>

namespace floodgate {

/** Supplies the value of an HTTP-style parameter (`param:` of a paramFlow rule) on demand;
    returns an empty value when the request has none. A plain function pointer and context, so
    the request path needs no `std::function`. */
struct param_extractor {
  const void* context = nullptr;
  param_value (*extract)(const void* context, const param_selector& selector) noexcept = nullptr;

  param_value operator()(const param_selector& s) const noexcept {
    return extract != nullptr ? extract(context, s) : param_value{};
  }
};

/// How to enter a resource.
struct entry_options {
  entry_type type = entry_type::outbound;  ///< Sentinel's default; HTTP requests are inbound
  std::uint32_t acquire = 1;
  bool prioritized = false;  ///< may borrow from the next window (Sentinel's tryOccupyNext)
  std::span<const param_value> args = {};  ///< for paramIdx rules
  param_extractor params = {};             ///< for param: {from, name} rules
  /** Time the entry in nanoseconds for the duration histogram (two clock reads, ~20 ns each).
      Otherwise durations come from the engine's millisecond clock, as the windows' response
      times do, and a request under a millisecond counts as 0 s. The HTTP middleware sets it. */
  bool precise_duration = false;
  /** The caller calls entry::proceed() when an entry's wait (throttling) is over: such an entry
      is counted as passed and in flight then, as Sentinel counts a throttled request after its
      flow slot's sleep, unless a QPS reject or warm-up rule of its resource, checked then as
      Sentinel checks it after the sleep, blocks it (proceed() returns false). Otherwise it is
      counted and checked at enter, wait or not (a caller that never says when its work starts
      is never left out of the in-flight count). The HTTP middleware sets it. */
  bool proceeds_after_wait = false;
};

}  // namespace floodgate
