// The real demo's hot keys: a Zipf-like flood on /users/{id} shows the hottest ids at
// /floodgate/hotkeys in the right order, and in the metrics as counts (never values).
#include "demo_fixture.hpp"

#include <boost/json/array.hpp>

#include <iostream>
#include <string>
#include <utility>
#include <vector>

namespace floodgate::test {
namespace {

constexpr const char* users_hotkeys = "/floodgate/hotkeys?resource=GET:/users/%7Bid%7D";

TEST_F(DemoTest, AZipfFloodOnUsersShowsTheHottestIdsInOrder) {
  start(R"(
hotKeys:
  - name: hot-users
    resource: "GET:/users/{id}"
    param: {from: path, name: id}
    windowSec: 60
    top: 5
    threshold: 50
)");
  // Id k is requested about 200 / k^1.1 times (Zipf, s = 1.1), plus 40 ids requested once.
  const std::vector<std::pair<std::string, int>> flood = {
      {"1", 200}, {"2", 93}, {"3", 60}, {"4", 43}, {"5", 34}, {"6", 28}};
  http_connection c{demo_->port()};
  for (int round = 0; round < 200; ++round) {
    for (const auto& [id, n] : flood) {
      if (round < n) {
        ASSERT_EQ(c.get("/users/" + id).status, 200u);
      }
    }
    if (round < 40) {
      ASSERT_EQ(c.get("/users/tail-" + std::to_string(round)).status, 200u);
    }
  }

  const boost::json::array top = admin_json(users_hotkeys).as_array();
  ASSERT_EQ(top.size(), 5u) << "top: 5";
  for (std::size_t i = 0; i < top.size(); ++i) {
    const auto& o = top[i].as_object();
    EXPECT_EQ(o.at("param").as_string(), "path:id");
    EXPECT_EQ(o.at("value").as_string(), flood[i].first) << "rank " << i;
    EXPECT_EQ(o.at("count").to_number<int>(), flood[i].second) << "rank " << i;
    EXPECT_EQ(o.at("hot").as_bool(), flood[i].second > 50) << "rank " << i;
    EXPECT_EQ(o.at("rule").as_string(), "hot-users");
  }

  const std::string m = metrics();
  const label_map labels{{"resource", "GET:/users/{id}"}, {"rule", "hot-users"}};
  EXPECT_EQ(sample(m, "floodgate_hot_keys", labels), 3.0);
  EXPECT_EQ(sample(m, "floodgate_hot_key_top_requests", labels), 200.0);
  EXPECT_EQ(sample(m, "floodgate_hot_key_events_total", labels), 3.0);
  // floodgate_rules has the SPEC's five types only; a hotKeys rule shows in its own series.
  EXPECT_EQ(sample(m, "floodgate_rules", {{"type", "hot_keys"}}), std::nullopt);
  EXPECT_EQ(m.find("tail-"), std::string::npos) << "no value is a label";
  const auto checked = promtool_check(m);
  if (checked) {
    EXPECT_TRUE(checked->ok) << checked->output;
  } else {
    std::cout << "SKIP: promtool is not installed: the hot-key series are not checked by it\n";
  }

  const boost::json::value rules = admin_json("/floodgate/rules");
  EXPECT_EQ(
      rules.as_object().at("hotKeys").as_array().at(0).as_object().at("threshold").to_number<int>(),
      50);
}

TEST_F(DemoTest, HotKeysOfAnUnknownResourceAreAnEmptyListAndValuesAreEscaped) {
  start(R"(
hotKeys:
  - resource: "GET:/hello"
    param: {from: header, name: X-User}
    threshold: 1
)");
  const std::string odd = "a\"b\\c</script>";
  for (int i = 0; i < 2; ++i) ASSERT_EQ(get("/hello", {{"X-User", odd}}).status, 200u);
  EXPECT_TRUE(admin_json("/floodgate/hotkeys?resource=GET:/nothing").as_array().empty());
  const boost::json::array top = admin_json("/floodgate/hotkeys?resource=GET:/hello").as_array();
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].as_object().at("value").as_string(), odd);
  EXPECT_EQ(top[0].as_object().at("param").as_string(), "header:X-User");
  EXPECT_EQ(top[0].as_object().at("count").to_number<int>(), 2);
  EXPECT_TRUE(top[0].as_object().at("hot").as_bool());
  EXPECT_EQ(http_get(demo_->admin_port(), "/floodgate/hotkeys").status, 400u)
      << "the resource is required";
}

}  // namespace
}  // namespace floodgate::test
