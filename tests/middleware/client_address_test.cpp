#include <floodgate/beast/client_address.hpp>

#include <gtest/gtest.h>

#include <vector>

namespace floodgate::beast {
namespace {

namespace ip = boost::asio::ip;

std::vector<ip_network> nets(std::initializer_list<const char*> cidrs) {
  std::vector<ip_network> out;
  for (const char* c : cidrs) out.push_back(*ip_network::parse(c));
  return out;
}

TEST(IpNetwork, ParsesCidrAndHosts) {
  EXPECT_TRUE(ip_network::parse("10.0.0.0/8"));
  EXPECT_TRUE(ip_network::parse("::1/128"));
  EXPECT_TRUE(ip_network::parse("192.168.1.7"));
  EXPECT_FALSE(ip_network::parse("10.0.0.0/33"));
  EXPECT_FALSE(ip_network::parse("10.0.0/8"));
  EXPECT_FALSE(ip_network::parse("10.0.0.0/x"));
  EXPECT_FALSE(ip_network::parse(""));
}

TEST(IpNetwork, ContainsByPrefix) {
  const auto n = *ip_network::parse("10.1.0.0/16");
  EXPECT_TRUE(n.contains(ip::make_address("10.1.200.3")));
  EXPECT_FALSE(n.contains(ip::make_address("10.2.0.1")));
  EXPECT_FALSE(n.contains(ip::make_address("::1")));
  EXPECT_TRUE(n.contains(ip::make_address("::ffff:10.1.0.9")));  // IPv4-mapped
  EXPECT_TRUE(ip_network::parse("0.0.0.0/0")->contains(ip::make_address("8.8.8.8")));
  const auto odd = *ip_network::parse("192.168.1.128/25");
  EXPECT_TRUE(odd.contains(ip::make_address("192.168.1.200")));
  EXPECT_FALSE(odd.contains(ip::make_address("192.168.1.100")));
}

TEST(ClientAddress, IsThePeerWhenThePeerIsNotTrusted) {
  const auto trusted = nets({"10.0.0.0/8"});
  const std::vector<std::string_view> xff = {"1.2.3.4"};
  EXPECT_EQ(client_address(ip::make_address("5.6.7.8"), xff, trusted).to_string(), "5.6.7.8");
}

TEST(ClientAddress, TakesTheRightmostUntrustedForwardedHop) {
  const auto trusted = nets({"10.0.0.0/8"});
  // The client may put anything on the left; only hops added by trusted proxies count.
  const std::vector<std::string_view> xff = {"6.6.6.6, 1.2.3.4", "10.0.0.2"};
  EXPECT_EQ(client_address(ip::make_address("10.0.0.1"), xff, trusted).to_string(), "1.2.3.4");
}

TEST(ClientAddress, StopsAtGarbage) {
  const auto trusted = nets({"10.0.0.0/8"});
  const std::vector<std::string_view> xff = {"1.2.3.4, not-an-ip"};
  EXPECT_EQ(client_address(ip::make_address("10.0.0.1"), xff, trusted).to_string(), "10.0.0.1");
}

TEST(ClientAddress, AllTrustedKeepsTheLeftmostHop) {
  const auto trusted = nets({"10.0.0.0/8"});
  const std::vector<std::string_view> xff = {"10.9.9.9,10.0.0.2"};
  EXPECT_EQ(client_address(ip::make_address("10.0.0.1"), xff, trusted).to_string(), "10.9.9.9");
}

}  // namespace
}  // namespace floodgate::beast
