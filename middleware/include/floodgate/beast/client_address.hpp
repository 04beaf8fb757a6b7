// Who is calling: the peer address, or the forwarded client address behind trusted proxies.
#pragma once

#include <boost/asio/ip/address.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace floodgate::beast {

/** An IP network in CIDR notation (`10.0.0.0/8`, `::1/128`; a bare address is a single host).
    IPv4-mapped IPv6 addresses are compared as IPv4. */
class ip_network {
 public:
  /// Parses CIDR notation; nullopt when malformed.
  static std::optional<ip_network> parse(std::string_view cidr) noexcept;

  bool contains(const boost::asio::ip::address& a) const noexcept;

 private:
  std::array<std::uint8_t, 16> bytes_{};
  bool v6_ = false;
  unsigned prefix_ = 0;
};

/** The address of the client: the peer itself, unless the peer is one of `trusted_proxies`; then
    the right-most address of the forwarding header values (`X-Forwarded-For`, comma-separated,
    in header order) that is not itself a trusted proxy. Unparseable entries stop the walk (the
    last trusted hop is returned), so a client cannot inject an address past a proxy. */
boost::asio::ip::address client_address(const boost::asio::ip::address& peer,
                                        std::span<const std::string_view> forwarded_for,
                                        std::span<const ip_network> trusted_proxies);

/// True when `a` is in any of `networks`.
bool is_trusted(const boost::asio::ip::address& a, std::span<const ip_network> networks) noexcept;

}  // namespace floodgate::beast
