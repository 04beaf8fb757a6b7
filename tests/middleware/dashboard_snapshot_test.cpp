// The dashboard's per-second snapshot on a manual clock (SPEC §11).
#include <floodgate/beast/dashboard_snapshot.hpp>
#include <floodgate/chain/clock.hpp>
#include <floodgate/system/manual_system_status.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace floodgate::beast {
namespace {

namespace json = boost::json;

class DashboardSnapshotTest : public ::testing::Test {
 protected:
  std::unique_ptr<engine> make_engine() {
    engine_options o;
    o.time = &clock_;
    o.system_status = status_;
    return std::make_unique<engine>(o);
  }

  void hit(std::string_view resource, int n, bool error = false) {
    for (int i = 0; i < n; ++i) {
      context ctx{*engine_, "http-inbound"};
      if (auto e = engine_->enter(ctx, resource, {.type = entry_type::inbound}); e && error) {
        e.trace_error();
      }
    }
  }

  json::value take() { return json::parse(snapshot_()); }

  manual_clock clock_;
  std::shared_ptr<manual_system_status> status_ = std::make_shared<manual_system_status>();
  std::unique_ptr<engine> engine_ = make_engine();
  dashboard_snapshot snapshot_{*engine_};
};

TEST_F(DashboardSnapshotTest, RowsAreTheBusiestResourcesFirst) {
  hit("quiet", 1);
  hit("busy", 5);
  hit("middle", 3);
  const json::value v = take();
  const json::array& rows = v.at("resources").as_array();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].as_array()[0].as_string(), "busy");
  EXPECT_EQ(rows[1].as_array()[0].as_string(), "middle");
  EXPECT_EQ(rows[2].as_array()[0].as_string(), "quiet");
  // [resource, passQps, blockQps, successQps, exceptionQps, avgRt, concurrency]
  ASSERT_EQ(rows[0].as_array().size(), 7u);
  EXPECT_EQ(rows[0].as_array()[1].to_number<double>(), 5.0);
  EXPECT_EQ(rows[0].as_array()[3].to_number<double>(), 5.0);
  EXPECT_EQ(rows[0].as_array()[6].to_number<std::int64_t>(), 0);
  EXPECT_EQ(v.at("resourceCount").to_number<int>(), 3);
  EXPECT_GT(v.at("t").to_number<std::int64_t>(), 1'600'000'000'000);
}

TEST_F(DashboardSnapshotTest, SnapshotsAddUpToExactlyTheRequestsServed) {
  clock_.set_ms(1'000'000'900);  // late in a 500 ms bucket: the window at the next snapshot,
  (void)take();                  // 1 s on, no longer holds the bucket of the requests below
  clock_.advance_ms(50);
  hit("GET:/a", 3);
  hit("GET:/a", 2, /*error=*/true);
  clock_.advance_ms(950);
  json::value v = take();
  ASSERT_EQ(v.at("resources").as_array().size(), 1u);
  const json::array& row = v.at("resources").as_array()[0].as_array();
  EXPECT_EQ(row[0].as_string(), "GET:/a");
  EXPECT_EQ(row[1].to_number<double>(), 5.0);  // passes
  EXPECT_EQ(row[2].to_number<double>(), 0.0);  // blocks
  EXPECT_EQ(row[3].to_number<double>(), 5.0);  // completions
  EXPECT_EQ(row[4].to_number<double>(), 2.0);  // errors
  // The next second counts only its own requests.
  clock_.advance_ms(1'000);
  hit("GET:/a", 1);
  v = take();
  EXPECT_EQ(v.at("resources").as_array()[0].as_array()[1].to_number<double>(), 1.0);
  clock_.advance_ms(1'000);
  EXPECT_EQ(take().at("resources").as_array()[0].as_array()[1].to_number<double>(), 0.0);
}

TEST_F(DashboardSnapshotTest, ResourcesIdleForAMinuteAreLeftOut) {
  hit("old", 1);
  clock_.advance_ms(61'000);
  hit("new", 1);
  const json::value v = take();
  const json::array& rows = v.at("resources").as_array();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].as_array()[0].as_string(), "new");
}

TEST_F(DashboardSnapshotTest, AtMostMaxResourcesRowsWhateverTheNumberOfResources) {
  for (std::size_t i = 0; i <= dashboard_snapshot::max_resources; ++i) {
    hit("r" + std::to_string(i), 1);
  }
  hit("r7", 1);  // the busiest must be kept
  const json::value v = take();
  const json::array& rows = v.at("resources").as_array();
  EXPECT_EQ(rows.size(), dashboard_snapshot::max_resources);
  EXPECT_EQ(rows[0].as_array()[0].as_string(), "r7");
  EXPECT_EQ(v.at("resourceCount").to_number<std::size_t>(), dashboard_snapshot::max_resources + 1);
}

TEST_F(DashboardSnapshotTest, BlockedCountsByReasonSinceThePreviousSnapshot) {
  ASSERT_TRUE(engine_->load_rules({.flow = {{.resource = "GET:/a", .count = 1}}}).ok());
  hit("GET:/a", 4);  // 1 passes, 3 blocked by flow
  json::value v = take();
  EXPECT_EQ(v.at("blocked").at("flow").to_number<int>(), 0);  // no previous snapshot
  clock_.advance_ms(1000);
  hit("GET:/a", 3);  // 1 passes, 2 blocked
  v = take();
  EXPECT_EQ(v.at("blocked").at("flow").to_number<int>(), 2);
  EXPECT_EQ(v.at("blocked").at("degrade").to_number<int>(), 0);
  v = take();
  EXPECT_EQ(v.at("blocked").at("flow").to_number<int>(), 0);
}

TEST_F(DashboardSnapshotTest, BreakersShowStateTimeToProbeAndTransitions) {
  ASSERT_TRUE(engine_
                  ->load_rules({.degrade = {{.name = "errors",
                                             .resource = "GET:/b",
                                             .grade = degrade_grade::error_count,
                                             .count = 1,
                                             .min_request_amount = 1,
                                             .time_window_sec = 10}}})
                  .ok());
  json::value v = take();
  json::object b = v.at("breakers").as_array().at(0).as_object();
  EXPECT_EQ(b.at("resource").as_string(), "GET:/b");
  EXPECT_EQ(b.at("rule").as_string(), "errors");
  EXPECT_EQ(b.at("state").as_string(), "closed");
  EXPECT_TRUE(b.at("nextProbeInMs").is_null());
  EXPECT_TRUE(b.at("transitions").as_array().empty());

  hit("GET:/b", 3, true);
  clock_.advance_ms(4000);
  b = take().at("breakers").as_array().at(0).as_object();
  EXPECT_EQ(b.at("state").as_string(), "open");
  EXPECT_EQ(b.at("nextProbeInMs").to_number<std::int64_t>(), 6000);
  const json::array& t = b.at("transitions").as_array();
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].at("from").as_string(), "closed");
  EXPECT_EQ(t[0].at("to").as_string(), "open");
  EXPECT_EQ(t[0].at("count").to_number<int>(), 1);
}

TEST_F(DashboardSnapshotTest, SystemReadingsOnlyWhileSystemRulesAreLoaded) {
  status_->set_cpu_usage(0.25);
  status_->set_load1(1.5);
  EXPECT_TRUE(take().at("system").is_null());
  ASSERT_TRUE(engine_->load_rules({.system = {{.max_thread = 100}}}).ok());
  json::value v = take();
  EXPECT_EQ(v.at("system").at("cpuUsage").to_number<double>(), 0.25);
  EXPECT_EQ(v.at("system").at("load1").to_number<double>(), 1.5);
  ASSERT_TRUE(engine_->load_rules({}).ok());
  EXPECT_TRUE(take().at("system").is_null());
}

TEST_F(DashboardSnapshotTest, NoWatcherMeansNoReloadAndTheSnapshotIsOneLine) {
  const std::string text = snapshot_();
  EXPECT_EQ(text.find('\n'), std::string::npos);
  EXPECT_TRUE(json::parse(text).at("reload").is_null());
}

}  // namespace
}  // namespace floodgate::beast
