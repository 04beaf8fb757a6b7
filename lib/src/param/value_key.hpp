// The identity of a hot-parameter value: a seeded 128-bit hash of its text form.
#pragma once

#include <floodgate/chain/param_value.hpp>

#include <cstdint>
#include <cstring>
#include <string_view>

namespace floodgate::param_detail {

/** Two 64-bit hashes of a value's text. Tables store keys instead of the text, so no value is
    ever copied or allocated; two different values share state only if both halves collide (127
    bits), which per-table random secrets make unpredictable. Bit 1 of `lo` is set: 0 and 1 mark
    empty and busy table slots. */
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
inline std::string_view value_text(const param_value& v,
                                   char (&buffer)[integer_text_size]) noexcept;

/** Hashes value texts to keys under secrets drawn from one seed.

    Why this shape: the request path hashes every value, and most values (ids, addresses, names)
    are at most 16 bytes. Those are read as two words (overlapping, and the length mixed in, so
    the words and the length determine the text) and keyed with three multiplications: one
    128-bit product of the masked words, then one fold per half of the key. Longer texts are first
    absorbed 16 bytes at a time into a 128-bit product chain. Every mask is secret, so which
    texts collide cannot be chosen from outside (header values are attacker-controlled).

    @par Thread Safety
    Immutable after construction; any number of threads.
*/
class value_hasher {
 public:
  explicit value_hasher(std::uint64_t seed) noexcept;

  value_key operator()(std::string_view text) const noexcept;

 private:
  struct words {
    std::uint64_t x;
    std::uint64_t y;
  };
  /// The two words a text longer than 16 bytes reduces to.
  words absorb(const char* p, std::size_t n) const noexcept;

  std::uint64_t secret_[6];
};

/// A fresh seed for a new table (control plane), from the process's random secret.
std::uint64_t random_seed() noexcept;

namespace detail {

__extension__ using uint128 = unsigned __int128;

/// The 128-bit product of a and b, folded to 64 bits: every input bit reaches every output bit.
inline std::uint64_t fold_multiply(std::uint64_t a, std::uint64_t b) noexcept {
  const auto p = static_cast<uint128>(a) * b;
  return static_cast<std::uint64_t>(p) ^ static_cast<std::uint64_t>(p >> 64);
}

inline std::uint64_t load_word(const char* p) noexcept {
  std::uint64_t w = 0;
  std::memcpy(&w, p, 8);
  return w;
}

inline std::uint64_t load_half_word(const char* p) noexcept {
  std::uint32_t w = 0;
  std::memcpy(&w, p, 4);
  return w;
}

std::string_view integer_text(std::int64_t i, char (&buffer)[integer_text_size]) noexcept;

}  // namespace detail

inline std::string_view value_text(const param_value& v,
                                   char (&buffer)[integer_text_size]) noexcept {
  if (v.type() == param_value::kind::integer) return detail::integer_text(v.as_integer(), buffer);
  return v.as_string();
}

inline value_key value_hasher::operator()(std::string_view text) const noexcept {
  const char* p = text.data();
  const std::size_t n = text.size();
  // Fixed-size loads only: assembling bytes one by one into a word stalls on store forwarding.
  std::uint64_t x = 0;
  std::uint64_t y = 0;
  if (n > 16) [[unlikely]] {
    const words w = absorb(p, n);
    x = w.x;
    y = w.y;
  } else if (n >= 8) {
    x = detail::load_word(p);
    y = detail::load_word(p + n - 8);
  } else if (n >= 4) {
    x = detail::load_half_word(p) | (detail::load_half_word(p + n - 4) << 32);
  } else if (n > 0) {
    const auto byte = [&](std::size_t i) {
      return std::uint64_t{static_cast<unsigned char>(p[i])};
    };
    x = byte(0) | (byte(n / 2) << 8) | (byte(n - 1) << 16);
  }
  const auto m = static_cast<detail::uint128>(x ^ secret_[0]) * (y ^ secret_[1]);
  const auto low = static_cast<std::uint64_t>(m);
  const auto high = static_cast<std::uint64_t>(m >> 64);
  const std::uint64_t lo = detail::fold_multiply(low ^ secret_[2], high ^ secret_[3] ^ n);
  const std::uint64_t hi = detail::fold_multiply(low ^ secret_[4] ^ n, high ^ secret_[5]);
  return {lo | 2, hi};  // never empty_key or busy_key
}

}  // namespace floodgate::param_detail
