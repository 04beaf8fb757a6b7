#include <floodgate/beast/query_string.hpp>

#include <gtest/gtest.h>

namespace floodgate::beast {
namespace {

TEST(QueryString, FindsTheFirstParameterByName) {
  std::string scratch;
  EXPECT_EQ(find_query_param("/p?a=1&b=2&a=3", "a", scratch), "1");
  EXPECT_EQ(find_query_param("/p?a=1&b=2", "b", scratch), "2");
  EXPECT_EQ(find_query_param("/p?a=1&b=2", "c", scratch), std::nullopt);
  EXPECT_EQ(find_query_param("/p", "a", scratch), std::nullopt);
}

TEST(QueryString, ParameterWithoutValueIsEmpty) {
  std::string scratch;
  EXPECT_EQ(find_query_param("/p?flag&x=1", "flag", scratch), "");
  EXPECT_EQ(find_query_param("/p?flag=", "flag", scratch), "");
}

TEST(QueryString, DecodesPercentAndPlus) {
  std::string scratch;
  EXPECT_EQ(find_query_param("/p?resource=GET%3A%2Fusers%2F%7Bid%7D", "resource", scratch),
            "GET:/users/{id}");
  EXPECT_EQ(find_query_param("/p?q=a+b%20c", "q", scratch), "a b c");
  EXPECT_EQ(find_query_param("/p?%75ser=vip", "user", scratch), "vip");
  EXPECT_EQ(find_query_param("/p?q=100%", "q", scratch), "100%");
}

TEST(QueryString, IgnoresTheFragment) {
  std::string scratch;
  EXPECT_EQ(find_query_param("/p?a=1#a=2", "a", scratch), "1");
  EXPECT_EQ(find_query_param("/p?x=1#&a=2", "a", scratch), std::nullopt);
}

// An audit: `/users/a%62` and `/users/ab` were two values of a `path` parameter, so a per-value
// paramFlow limit could be sidestepped by encoding a character.
TEST(PathSegment, IsPercentDecodedAndKeepsPlus) {
  std::string scratch;
  EXPECT_EQ(decode_path_segment("a%62", scratch), "ab");
  EXPECT_EQ(decode_path_segment("a+b%20c", scratch), "a+b c");
  EXPECT_EQ(decode_path_segment("%zz%4", scratch), "%zz%4");  // malformed escapes kept
  const std::string_view plain = "plain+value";
  EXPECT_EQ(decode_path_segment(plain, scratch).data(), plain.data()) << "no copy when plain";
}

}  // namespace
}  // namespace floodgate::beast
