// The entry's value of a rule's parameter (`param: {from, name}` or `paramIdx`).
#pragma once

#include <floodgate/chain/slot.hpp>

#include <cstdint>
#include <new>
#include <optional>
#include <type_traits>

namespace floodgate::param_detail {

/// Room for a value taken from the request, left uninitialized until one is: the request path
/// does not zero 32 bytes per rule for paramIdx rules, which never use it.
struct value_room {
  alignas(param_value) unsigned char bytes[sizeof(param_value)];
};

/** The entry's value of the parameter a rule names, or null when it has none (the rule does not
    apply): an argument (`param_idx`, negative from the end), or a value taken from the request
    (`param`) and constructed in `room`. */
inline const param_value* parameter_of(const check_context& ctx,
                                       const std::optional<param_selector>& param,
                                       const std::optional<std::int32_t>& param_idx,
                                       value_room& room) noexcept {
  static_assert(std::is_trivially_destructible_v<param_value>, "room is never destroyed");
  const param_value* value = nullptr;
  if (param_idx) {
    const std::size_t n = ctx.args.size();
    std::int64_t i = *param_idx;
    if (i < 0) i += static_cast<std::int64_t>(n);
    if (static_cast<std::uint64_t>(i) >= n) return nullptr;
    value = &ctx.args[static_cast<std::size_t>(i)];
  } else if (param) {
    value = ::new (room.bytes) param_value(ctx.params(*param));
  } else {
    return nullptr;
  }
  return value->empty() ? nullptr : value;
}

}  // namespace floodgate::param_detail
