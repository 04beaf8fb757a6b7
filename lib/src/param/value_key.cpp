#include "param/value_key.hpp"

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstring>

namespace floodgate::param_detail {

namespace {

__extension__ using uint128 = unsigned __int128;

/// The 128-bit product of a and b, folded to 64 bits: every input bit reaches every output bit.
std::uint64_t fold_multiply(std::uint64_t a, std::uint64_t b) noexcept {
  const auto p = static_cast<uint128>(a) * b;
  return static_cast<std::uint64_t>(p) ^ static_cast<std::uint64_t>(p >> 64);
}

std::uint64_t load_word(const char* p) noexcept {
  std::uint64_t w = 0;
  std::memcpy(&w, p, 8);
  return w;
}

/** The last 1..7 bytes as one word, read with fixed-size (possibly overlapping) loads: copying
    them byte by byte into a word stalls on store forwarding. Given n, every byte is covered. */
std::uint64_t load_tail(const char* p, std::size_t n) noexcept {
  if (n >= 4) {
    std::uint32_t first = 0;
    std::uint32_t last = 0;
    std::memcpy(&first, p, 4);
    std::memcpy(&last, p + n - 4, 4);
    return first | (std::uint64_t{last} << 32);
  }
  const auto byte = [&](std::size_t i) { return std::uint64_t{static_cast<unsigned char>(p[i])}; };
  return byte(0) | (byte(n / 2) << 8) | (byte(n - 1) << 16);
}

// Odd constants with well-spread bits (digits of pi, e and sqrt(2)).
constexpr std::uint64_t k0 = 0x243f6a8885a308d3ULL;
constexpr std::uint64_t k1 = 0x13198a2e03707345ULL;
constexpr std::uint64_t k2 = 0xb7e151628aed2a6bULL;
constexpr std::uint64_t k3 = 0x6a09e667f3bcc909ULL;

std::uint64_t at_least_two(std::uint64_t h) noexcept { return h < 2 ? h + 2 : h; }

}  // namespace

std::string_view value_text(const param_value& v, char (&buffer)[integer_text_size]) noexcept {
  if (v.type() == param_value::kind::integer) {
    const auto r = std::to_chars(buffer, buffer + integer_text_size, v.as_integer());
    return {buffer, static_cast<std::size_t>(r.ptr - buffer)};
  }
  return v.as_string();
}

value_key hash_value(std::string_view text, std::uint64_t seed) noexcept {
  const std::uint64_t len = text.size();
  std::uint64_t a = seed ^ fold_multiply(len ^ k0, k1);
  std::uint64_t b = (seed * k3) ^ len ^ k2;
  const char* p = text.data();
  std::size_t n = text.size();
  for (; n >= 8; p += 8, n -= 8) {
    const std::uint64_t w = load_word(p);
    a = fold_multiply(a ^ w, k1);
    b = fold_multiply(b + w, k3) ^ a;
  }
  if (n > 0) {
    const std::uint64_t w = load_tail(p, n);
    a = fold_multiply(a ^ w, k1);
    b = fold_multiply(b + w, k3) ^ a;
  }
  a = fold_multiply(a ^ (a >> 31), k2);
  b = fold_multiply(b ^ (b >> 29) ^ k0, (k2 ^ a) | 1);
  return {at_least_two(a), at_least_two(b)};
}

std::uint64_t random_seed() noexcept {
  static std::atomic<std::uint64_t> counter{0};
  const auto now =
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  const auto addr = reinterpret_cast<std::uintptr_t>(&counter);
  return fold_multiply(now ^ k0, counter.fetch_add(k1, std::memory_order_relaxed) ^ addr ^ k2);
}

}  // namespace floodgate::param_detail
