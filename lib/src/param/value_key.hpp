// The identity of a hot-parameter value: a seeded 128-bit hash of its text form.
#pragma once

#include <floodgate/core/param_value.hpp>

#include <cstdint>
#include <string_view>

namespace floodgate::param_detail {

/** Two independent 64-bit hashes of a value's text. Tables store keys instead of the text, so
    no value is ever copied or allocated; two different values share state only if all 128 bits
    collide, which a per-table random seed makes unpredictable. Both halves are >= 2: 0 and 1
    mark empty and busy table slots. */
struct value_key {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  friend bool operator==(const value_key&, const value_key&) = default;
  friend auto operator<=>(const value_key&, const value_key&) = default;
};

/// Room for the decimal form of any 64-bit integer.
inline constexpr std::size_t integer_text_size = 24;

/** The text a value is matched by: a string as is, an integer in decimal written into `buffer`
    (so `42` and `"42"` are the same value). Never allocates. */
std::string_view value_text(const param_value& v, char (&buffer)[integer_text_size]) noexcept;

/// The key of `text` under `seed`.
value_key hash_value(std::string_view text, std::uint64_t seed) noexcept;

/// A fresh seed for a new table (control plane).
std::uint64_t random_seed() noexcept;

}  // namespace floodgate::param_detail
