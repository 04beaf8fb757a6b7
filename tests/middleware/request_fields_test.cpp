// Header lookups of the guard: names compared as HTTP does (ASCII case-insensitive), Beast's
// field codes for known names, keep-alive as message::keep_alive() decides it (reading every
// Connection line, where Beast reads the first).
#include <floodgate/beast/detail/request_params.hpp>

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <utility>
#include <vector>

namespace floodgate::beast::detail {
namespace {

namespace http = boost::beast::http;
using request = http::request<http::string_body>;

bool names_equal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && header_names_equal(a.data(), b.data(), a.size());
}

TEST(HeaderNamesEqual, IgnoresTheCaseOfLettersAtEveryLengthAndPosition) {
  const std::string upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ-ABCDEFGHIJKLMNOPQ";
  std::string lower = upper;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::size_t n = 0; n <= upper.size(); ++n) {
    EXPECT_TRUE(names_equal(upper.substr(0, n), lower.substr(0, n))) << n;
    if (n == 0) continue;
    std::string other = lower.substr(0, n);
    other[n - 1] = '_';  // a different last byte, inside a word or in the tail
    EXPECT_FALSE(names_equal(upper.substr(0, n), other)) << n;
  }
}

TEST(HeaderNamesEqual, FoldsOnlyLetters) {
  // Pairs that differ by 0x20 but are not letters of different case.
  const std::vector<std::pair<std::string, std::string>> unequal = {
      {"@", "`"},
      {"[", "{"},
      {"\\", "|"},
      {"]", "}"},
      {"^", "~"},
      {"_", "\x7f"},
      {"\xc1", "\xe1"},  // bytes past ASCII compare exactly
      {"X-Origin@@", "x-origin``"},
      {"0", "\x10"}};
  for (const auto& [a, b] : unequal) {
    EXPECT_FALSE(names_equal(a, b)) << a << " / " << b;
    EXPECT_EQ(boost::beast::iequals(a, b), names_equal(a, b)) << a << " / " << b;
  }
  EXPECT_TRUE(names_equal("x-ORIGIN", "X-origin"));
  EXPECT_TRUE(names_equal("\xc1Z", "\xc1z"));
}

TEST(HeaderNamesEqual, AgreesWithBeastOnEveryPairOfBytes) {
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) {
      // The pair inside a word (each of its eight places), and in the byte-wise tail.
      for (std::size_t at = 0; at < 9; ++at) {
        std::string x = "abcdefghi";
        std::string y = "ABCDEFGHI";
        x[at] = static_cast<char>(a);
        y[at] = static_cast<char>(b);
        ASSERT_EQ(boost::beast::iequals(x, y), names_equal(x, y)) << a << " " << b << " @" << at;
      }
    }
  }
}

TEST(FindField, FindsKnownAndUnknownNamesInAnyCase) {
  request req{http::verb::get, "/", 11};
  req.insert("Host", "example");
  req.insert("x-origin", "alice");
  req.insert("X-Origin", "bob");  // the first one wins, as basic_fields::find
  req.insert("ACCEPT", "*/*");

  EXPECT_EQ(find_field(req.base(), header_name{"X-ORIGIN"}), "alice");
  EXPECT_EQ(find_field(req.base(), header_name{"accept"}), "*/*");
  EXPECT_EQ(find_field(req.base(), header_name{"Host"}), "example");
  EXPECT_EQ(find_field(req.base(), header_name{"X-User"}), std::nullopt);
  EXPECT_EQ(find_field(req.base(), header_name{"Connection"}), std::nullopt);
  EXPECT_EQ(header_name{"accept"}.code, http::field::accept);
  EXPECT_EQ(header_name{"X-Origin"}.code, http::field::unknown);
}

TEST(KeepAlive, DecidesAsBeastDoes) {
  const std::vector<const char*> connections = {
      nullptr, "close", "Close", "keep-alive", "Keep-Alive", "upgrade, close", "upgrade", ""};
  for (const unsigned version : {10u, 11u}) {
    for (const char* connection : connections) {
      request req{http::verb::get, "/", version};
      req.insert(http::field::host, "example");
      if (connection != nullptr) req.insert(http::field::connection, connection);
      EXPECT_EQ(keep_alive(req.base(), version), req.keep_alive())
          << version << " " << (connection != nullptr ? connection : "(none)");
    }
  }
  request old{http::verb::get, "/", 10};
  EXPECT_FALSE(keep_alive(old.base(), 10));
  request current{http::verb::get, "/", 11};
  EXPECT_TRUE(keep_alive(current.base(), 11));
}

// Beast's message::keep_alive() reads the first Connection line only; a `close` in any line
// closes (RFC 9110 section 5.3: the lines are one list; RFC 9112 section 9.6).
TEST(KeepAlive, EveryConnectionLineCounts) {
  const auto with = [](unsigned version, std::vector<const char*> lines) {
    request req{http::verb::get, "/", version};
    for (const char* line : lines) req.insert(http::field::connection, line);
    return keep_alive(req.base(), version);
  };
  EXPECT_FALSE(with(11, {"keep-alive", "close"}));
  EXPECT_FALSE(with(11, {"foo", "bar, close"}));
  EXPECT_TRUE(with(11, {"foo", "bar"}));
  EXPECT_TRUE(with(10, {"foo", "keep-alive"}));
  EXPECT_FALSE(with(10, {"keep-alive", "close"}));
  EXPECT_FALSE(with(10, {"foo", "bar"}));
}

}  // namespace
}  // namespace floodgate::beast::detail
