#include "param/value_key.hpp"

#include "node/node_registry.hpp"

#include <atomic>
#include <charconv>

namespace floodgate::param_detail {

namespace {

// Odd constants with well-spread bits (digits of pi, e and sqrt(2)).
constexpr std::uint64_t k0 = 0x243f6a8885a308d3ULL;
constexpr std::uint64_t k1 = 0x13198a2e03707345ULL;
constexpr std::uint64_t k2 = 0xb7e151628aed2a6bULL;
constexpr std::uint64_t k3 = 0x6a09e667f3bcc909ULL;

}  // namespace

namespace detail {

std::string_view integer_text(std::int64_t i, char (&buffer)[integer_text_size]) noexcept {
  const auto r = std::to_chars(buffer, buffer + integer_text_size, i);
  return {buffer, static_cast<std::size_t>(r.ptr - buffer)};
}

}  // namespace detail

value_hasher::value_hasher(std::uint64_t seed) noexcept {
  // Each secret is a full mix of the seed and the previous secret: none is a known function of
  // another, and none is 0 (a zero mask would let x or y pass unmasked).
  std::uint64_t s = seed ^ k0;
  for (auto& secret : secret_) {
    s = detail::fold_multiply(s ^ k1, k2) ^ k3;
    secret = s | 1;
  }
}

value_hasher::words value_hasher::absorb(const char* p, std::size_t n) const noexcept {
  // The chain's state is the whole 128-bit product: one block cannot cancel another unless all
  // of it is known.
  std::uint64_t a = secret_[4];
  std::uint64_t b = secret_[5];
  const char* const end = p + n;
  for (; end - p > 16; p += 16) {
    const auto m = static_cast<detail::uint128>(detail::load_word(p) ^ a ^ secret_[0]) *
                   (detail::load_word(p + 8) ^ b ^ secret_[1]);
    a = static_cast<std::uint64_t>(m);
    b = static_cast<std::uint64_t>(m >> 64);
  }
  // The last 16 bytes of the text, overlapping the last block when n is not a multiple of 16.
  return {detail::load_word(end - 16) ^ a, detail::load_word(end - 8) ^ b};
}

std::uint64_t random_seed() noexcept {
  // The process's secret (std::random_device, drawn once), so no caller can predict a table's
  // masks from when or where it was made; the counter makes each table's seed its own.
  static std::atomic<std::uint64_t> counter{0};
  const node::name_hash_key& key = node::detail::process_name_hash_key();
  const std::uint64_t n = counter.fetch_add(1, std::memory_order_relaxed);
  return detail::fold_multiply(key.seed ^ (n * k1 + k0), key.block ^ k2) ^ key.last;
}

}  // namespace floodgate::param_detail
