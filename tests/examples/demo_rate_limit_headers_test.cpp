// The demo's --rate-limit-headers flag over HTTP: off by default, ietf and draft03 on passed
// and blocked answers, anything else rejected at start-up.
#include "demo_fixture.hpp"

#include <chrono>

namespace floodgate::test {
namespace {

using namespace std::chrono_literals;

constexpr const char* two_per_second = R"(flow: [{resource: "GET:/hello", count: 2}])";

TEST_F(DemoTest, RateLimitHeadersAreOffByDefault) {
  start(two_per_second);
  http_connection c{demo_->port()};
  for (int i = 0; i < 3; ++i) {
    const http_response r = c.get("/hello");
    EXPECT_FALSE(r.has_header("ratelimit"));
    EXPECT_FALSE(r.has_header("ratelimit-policy"));
    EXPECT_FALSE(r.has_header("x-ratelimit-limit"));
  }
}

TEST_F(DemoTest, IetfRateLimitFieldsOnPassAndBlock) {
  start(two_per_second, {"--rate-limit-headers", "ietf"});
  http_connection c{demo_->port()};
  bool saw_pass = false;
  bool saw_block = false;
  for (int i = 0; i < 10 && !(saw_pass && saw_block); ++i) {
    const http_response r = c.get("/hello");
    EXPECT_EQ(r.header("ratelimit-policy"), R"("default";q=2;w=1)");
    if (r.status == 200) {
      saw_pass = true;
      EXPECT_TRUE(r.header("ratelimit") == R"("default";r=1;t=1)" ||
                  r.header("ratelimit") == R"("default";r=0;t=1)")
          << r.header("ratelimit");
    } else {
      saw_block = true;
      EXPECT_EQ(r.status, 429u);
      EXPECT_EQ(r.header("ratelimit"), R"("default";r=0;t=1)");
      EXPECT_GE(std::stoi(r.header("retry-after")), 1);
    }
  }
  EXPECT_TRUE(saw_pass);
  EXPECT_TRUE(saw_block);
}

// The rule file's key (SPEC §11; guard tests reload it); the flag, when given, overrides it.
TEST_F(DemoTest, TheRuleFilesRateLimitHeadersKeyTurnsTheFieldsOn) {
  start("rateLimitHeaders: ietf\nflow: [{resource: \"GET:/hello\", count: 2}]\n");
  http_response r = get("/hello");
  EXPECT_EQ(r.header("ratelimit-policy"), R"("default";q=2;w=1)");
  EXPECT_TRUE(r.has_header("ratelimit"));
  EXPECT_EQ(admin_json("/floodgate/rules").as_object().at("rateLimitHeaders").as_string(), "ietf");
}

TEST_F(DemoTest, TheFlagOverridesTheRuleFilesRateLimitHeaders) {
  start("rateLimitHeaders: ietf\nflow: [{resource: \"GET:/hello\", count: 2}]\n",
        {"--rate-limit-headers", "off"});
  const http_response r = get("/hello");
  EXPECT_EQ(r.status, 200u);
  EXPECT_FALSE(r.has_header("ratelimit-policy"));
  EXPECT_FALSE(r.has_header("ratelimit"));
}

TEST_F(DemoTest, Draft03RateLimitFields) {
  start(two_per_second, {"--rate-limit-headers=draft03"});
  const http_response r = get("/hello");
  EXPECT_EQ(r.header("x-ratelimit-limit"), "2, 2;w=1");
  EXPECT_TRUE(r.has_header("x-ratelimit-remaining"));
  EXPECT_EQ(r.header("x-ratelimit-reset"), "1");
}

TEST_F(DemoTest, AnUnknownRateLimitHeaderStyleIsRejected) {
  const demo_result r = run_demo({"--rate-limit-headers", "draft99"}, 30s);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("floodgate-demo: --rate-limit-headers: must be off, draft03 or ietf\n", 0),
            0u)
      << r.err;
}

}  // namespace
}  // namespace floodgate::test
