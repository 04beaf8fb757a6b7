// Java's narrowing casts from double: truncate toward zero, saturate, NaN → 0. Sentinel's flow
// math depends on them, and a plain C++ cast of an out-of-range double is undefined.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace floodgate::flow::detail {

template <class Int>
Int java_cast(double v) noexcept {
  if (std::isnan(v)) {
    return 0;
  }
  if (v >= static_cast<double>(std::numeric_limits<Int>::max())) {
    return std::numeric_limits<Int>::max();
  }
  if (v <= static_cast<double>(std::numeric_limits<Int>::min())) {
    return std::numeric_limits<Int>::min();
  }
  return static_cast<Int>(v);
}

/// `(int) v` in Java.
inline std::int32_t java_int(double v) noexcept { return java_cast<std::int32_t>(v); }
/// `(long) v` in Java.
inline std::int64_t java_long(double v) noexcept { return java_cast<std::int64_t>(v); }

}  // namespace floodgate::flow::detail
