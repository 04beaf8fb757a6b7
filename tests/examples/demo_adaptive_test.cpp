// The adaptive (Google SRE) breaker over the real demo: a dependency that can serve half of the
// load gets a steady share of it, not all or nothing, and everything again once it heals.
#include "demo_fixture.hpp"

#include <chrono>
#include <string>

namespace floodgate::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// A 1 s window (40 buckets of 25 ms) keeps the test short; k = 1.5 as in go-zero.
constexpr const char* adaptive_rules = R"(degrade:
  - resource: "GET:/status/{code}"
    grade: adaptive
    k: 1.5
    minRequestAmount: 10
    statIntervalMs: 1000
)";
constexpr auto window = 1000ms;

bool dropped(const http_response& r) { return r.header("X-Floodgate-Blocked") == "degrade"; }

/** A client of a dependency that can serve half of the load: in every round of 20 requests, the
    first 10 to get through succeed (/status/200) and the rest fail (/status/503), as an
    overloaded backend answers. At full admission half of the requests fail. */
struct half_capacity_client {
  http_connection& c;
  int offered = 0;
  int admitted = 0;
  int succeeded = 0;
  http_response last_drop;

  void round() {
    int served = 0;
    for (int i = 0; i < 20; ++i) {
      const http_response r = c.get(served < 10 ? "/status/200" : "/status/503");
      ++offered;
      if (dropped(r)) {
        last_drop = r;
        continue;
      }
      ++admitted;
      if (r.status == 200) {
        ++served;
        ++succeeded;
      }
    }
  }
  double admitted_share() const { return static_cast<double>(admitted) / offered; }
};

TEST_F(DemoTest, AdaptiveBreakerAdmitsASteadyShareOfAHalfFailingDependencyAndAllOnceItHeals) {
  start(adaptive_rules);
  http_connection c{demo_->port()};

  // Failing: two windows to settle, then four slices of 400 requests each.
  half_capacity_client settle{c};
  for (const auto end = clock_type::now() + 2 * window; clock_type::now() < end;) settle.round();
  for (int slice = 0; slice < 4; ++slice) {
    half_capacity_client client{c};
    for (int i = 0; i < 20; ++i) client.round();
    // k times what the dependency accepts: 1.5 x 50 % = 75 % of the load, neither all nor none.
    EXPECT_GT(client.admitted_share(), 0.55) << "slice " << slice;
    EXPECT_LT(client.admitted_share(), 0.95) << "slice " << slice;
    EXPECT_NEAR(static_cast<double>(client.admitted) / client.succeeded, 1.5, 0.25)
        << "slice " << slice;
    if (slice == 3) {
      const http_response& r = client.last_drop;
      ASSERT_EQ(r.status, 503u);
      EXPECT_EQ(r.header("Retry-After"), "1");
      EXPECT_EQ(r.body, R"({"blocked":"degrade","resource":"GET:/status/{code}"})");
    }
  }
  const boost::json::value breakers = admin_json("/floodgate/breakers");
  ASSERT_EQ(breakers.as_array().size(), 1u);
  const boost::json::object& b = breakers.as_array()[0].as_object();
  EXPECT_EQ(b.at("state").as_string(), "open");  // dropping a share
  EXPECT_GT(b.at("dropRatio").to_number<double>(), 0.05);
  EXPECT_GT(sample(metrics(), "floodgate_adaptive_drop_ratio",
                   {{"resource", "GET:/status/{code}"}, {"rule", "degrade[0]"}})
                .value_or(0),
            0.05);

  // Healed: every request succeeds. Once a window of good requests has passed (plus two 25 ms
  // buckets: the ratio is published per bucket), nothing drops.
  const auto healed = clock_type::now();
  int dropped_while_healing = 0;
  while (clock_type::now() < healed + window + 50ms) {
    dropped_while_healing += dropped(c.get("/status/200")) ? 1 : 0;
  }
  int dropped_after_window = 0;
  for (int i = 0; i < 200; ++i) {
    dropped_after_window += dropped(c.get("/status/200")) ? 1 : 0;
  }
  EXPECT_EQ(dropped_after_window, 0) << dropped_while_healing << " dropped while healing";
  const boost::json::value after = admin_json("/floodgate/breakers");
  EXPECT_EQ(after.as_array()[0].at("dropRatio").to_number<double>(), 0.0);
  EXPECT_EQ(after.as_array()[0].at("state").as_string(), "closed");
}

}  // namespace
}  // namespace floodgate::test
