#include <floodgate/beast/route_table.hpp>

#include <gtest/gtest.h>

#include <stdexcept>

namespace floodgate::beast {
namespace {

route_table demo_like() {
  route_table t;
  t.add("GET", "/hello");
  t.add("GET", "/users/{id}");
  t.add("GET", "/users/{id}/orders/{order}");
  t.add("POST", "/users");
  return t;
}

TEST(RouteTable, NamesResourcesMethodColonTemplate) {
  const auto t = demo_like();
  EXPECT_EQ(t.match("GET", "/hello").resource(), "GET:/hello");
  EXPECT_EQ(t.match("GET", "/users/42").resource(), "GET:/users/{id}");
  EXPECT_EQ(t.match("GET", "/users/42/orders/7").resource(), "GET:/users/{id}/orders/{order}");
  EXPECT_EQ(t.match("POST", "/users").resource(), "POST:/users");
}

TEST(RouteTable, CapturesParametersAndIgnoresTheQuery) {
  const auto t = demo_like();
  const auto m = t.match("GET", "/users/42/orders/7?expand=1#top");
  ASSERT_TRUE(m.matched());
  EXPECT_EQ(m.index(), 2u);
  EXPECT_EQ(m.param("id"), "42");
  EXPECT_EQ(m.param("order"), "7");
  EXPECT_EQ(m.param("missing"), "");
  EXPECT_EQ(m.path_template(), "/users/{id}/orders/{order}");
}

TEST(RouteTable, UnmatchedRequestsShareOneResource) {
  const auto t = demo_like();
  for (const char* target : {"/nope", "/hello/", "//hello", "/users/", "/users", "/%68ello",
                             "/users/1/2", "http://x/", "ftp://x/hello", "*", ""}) {
    const auto m = t.match("GET", target);
    EXPECT_FALSE(m.matched()) << target;
    EXPECT_EQ(m.resource(), "<unmatched>") << target;
    EXPECT_EQ(m.index(), route_match::npos) << target;
  }
}

TEST(RouteTable, MethodMustMatch) {
  const auto t = demo_like();
  EXPECT_EQ(t.match("DELETE", "/hello").resource(), "<unmatched>");
  EXPECT_EQ(t.match("get", "/hello").resource(), "<unmatched>");
}

TEST(RouteTable, FirstMatchingRouteWins) {
  route_table t;
  t.add("GET", "/users/me");
  t.add("GET", "/users/{id}");
  EXPECT_EQ(t.match("GET", "/users/me").resource(), "GET:/users/me");
  EXPECT_EQ(t.match("GET", "/users/you").resource(), "GET:/users/{id}");
}

TEST(RouteTable, RejectsMalformedTemplates) {
  route_table t;
  EXPECT_THROW(t.add("GET", "hello"), std::invalid_argument);
  EXPECT_THROW(t.add("GET", "/a{id}"), std::invalid_argument);
  EXPECT_THROW(t.add("GET", "/{}"), std::invalid_argument);
  EXPECT_THROW(t.add("GET", "/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}/{i}"), std::invalid_argument);
  EXPECT_EQ(t.size(), 0u);
}

TEST(RouteTable, TargetPathStopsAtQueryOrFragment) {
  EXPECT_EQ(target_path("/a/b?x=1"), "/a/b");
  EXPECT_EQ(target_path("/a#f"), "/a");
  EXPECT_EQ(target_path("/a"), "/a");
}

// RFC 9112 section 3.2.2: a server must accept a request target in absolute form.
TEST(RouteTable, AnAbsoluteFormTargetMatchesByItsPath) {
  EXPECT_EQ(target_path("http://example.com/a/b?x=1"), "/a/b");
  EXPECT_EQ(target_path("HTTPS://example.com:8443/a"), "/a");
  EXPECT_EQ(target_path("http://example.com"), "/");
  EXPECT_EQ(target_path("http://example.com?x=/a"), "/");
  EXPECT_EQ(target_path("ftp://example.com/a"), "");
  EXPECT_EQ(target_path("/a?next=http://b/c"), "/a") << "a scheme in the query is not a scheme";
  route_table t;
  t.add("GET", "/users/{id}");
  const route_match m = t.match("GET", "http://example.com/users/42?x=1");
  EXPECT_EQ(m.resource(), "GET:/users/{id}");
  EXPECT_EQ(m.param("id"), "42");
}

}  // namespace
}  // namespace floodgate::beast
