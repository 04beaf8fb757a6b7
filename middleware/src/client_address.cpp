#include <floodgate/beast/client_address.hpp>

#include <charconv>
#include <string>

namespace floodgate::beast {

namespace ip = boost::asio::ip;

namespace {

/// IPv4-mapped IPv6 (`::ffff:10.0.0.1`) is the IPv4 address.
ip::address unmapped(const ip::address& a) noexcept {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return ip::make_address_v4(ip::v4_mapped, a.to_v6());
  }
  return a;
}

std::optional<ip::address> parse_address(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  boost::system::error_code ec;
  const auto a = ip::make_address(std::string(s), ec);
  if (ec) {
    return std::nullopt;
  }
  return unmapped(a);
}

}  // namespace

std::optional<ip_network> ip_network::parse(std::string_view cidr) noexcept {
  const std::size_t slash = cidr.find('/');
  const auto addr = parse_address(cidr.substr(0, slash));
  if (!addr) {
    return std::nullopt;
  }
  ip_network n;
  n.v6_ = addr->is_v6();
  const unsigned max_prefix = n.v6_ ? 128 : 32;
  n.prefix_ = max_prefix;
  if (slash != std::string_view::npos) {
    const std::string_view p = cidr.substr(slash + 1);
    const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), n.prefix_);
    if (ec != std::errc{} || end != p.data() + p.size() || n.prefix_ > max_prefix) {
      return std::nullopt;
    }
  }
  if (n.v6_) {
    n.bytes_ = addr->to_v6().to_bytes();
  } else {
    const auto b = addr->to_v4().to_bytes();
    std::copy(b.begin(), b.end(), n.bytes_.begin());
  }
  return n;
}

bool ip_network::contains(const ip::address& raw) const noexcept {
  const ip::address a = unmapped(raw);
  if (a.is_v6() != v6_) {
    return false;
  }
  std::array<std::uint8_t, 16> b{};
  if (v6_) {
    b = a.to_v6().to_bytes();
  } else {
    const auto v4 = a.to_v4().to_bytes();
    std::copy(v4.begin(), v4.end(), b.begin());
  }
  unsigned bits = prefix_;
  for (std::size_t i = 0; bits > 0; ++i) {
    const unsigned take = bits >= 8 ? 8 : bits;
    const auto mask = static_cast<std::uint8_t>(0xFFu << (8 - take));
    if ((b[i] & mask) != (bytes_[i] & mask)) {
      return false;
    }
    bits -= take;
  }
  return true;
}

bool is_trusted(const ip::address& a, std::span<const ip_network> networks) noexcept {
  for (const auto& n : networks) {
    if (n.contains(a)) {
      return true;
    }
  }
  return false;
}

ip::address client_address(const ip::address& peer, std::span<const std::string_view> forwarded_for,
                           std::span<const ip_network> trusted_proxies) {
  ip::address current = unmapped(peer);
  // Walk from the nearest hop outwards while each hop is a proxy we trust.
  for (auto v = forwarded_for.rbegin(); v != forwarded_for.rend(); ++v) {
    std::string_view list = *v;
    while (is_trusted(current, trusted_proxies)) {
      if (list.empty()) {
        break;
      }
      const std::size_t comma = list.rfind(',');
      const std::string_view hop = comma == std::string_view::npos ? list : list.substr(comma + 1);
      list = comma == std::string_view::npos ? std::string_view{} : list.substr(0, comma);
      const auto a = parse_address(hop);
      if (!a) {
        return current;
      }
      current = *a;
    }
    if (!is_trusted(current, trusted_proxies)) {
      break;
    }
  }
  return current;
}

}  // namespace floodgate::beast
