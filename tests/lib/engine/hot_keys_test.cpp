// Hot keys through the engine: hotKeys rules and paramFlow rules track their parameter's values;
// the top values, the threshold, transitions told to observers, and state across reloads.
#include <floodgate/engine/engine.hpp>

#include <gtest/gtest.h>

#include <array>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

namespace floodgate {
namespace {

constexpr std::string_view users = "GET:/users/{id}";

hot_keys_rule hot_rule(double threshold, std::int32_t window_sec = 5, std::int32_t top = 3) {
  hot_keys_rule r;
  r.resource = std::string(users);
  r.param_idx = 0;
  r.window_sec = window_sec;
  r.top = top;
  r.threshold = threshold;
  return r;
}

struct HotKeys : ::testing::Test {
  manual_clock clock;
  engine eng{engine_options{.time = &clock, .hot_key_refresh_ms = 0}};
  context ctx{eng, "http-inbound"};
  std::vector<hot_key_event> events;

  void load(rule_set rules) { ASSERT_TRUE(eng.load_rules(rules)); }
  void hit(param_value id, int times = 1) {
    const std::array<param_value, 1> args{id};
    for (int i = 0; i < times; ++i) {
      auto e = eng.enter(ctx, users, {.type = entry_type::inbound, .args = args});
    }
  }
  void observe() {
    eng.add_hot_key_observer([this](const hot_key_event& e) { events.push_back(e); });
  }
};

TEST_F(HotKeys, ReportsTheTopValuesHighestFirst) {
  load({.hot_keys = {hot_rule(100)}});
  hit("alice", 5);
  hit("bob", 9);
  hit(std::int64_t{42}, 7);
  hit("carol", 1);
  const auto top = eng.hot_keys(users);
  ASSERT_EQ(top.size(), 3u) << "top: 3";
  EXPECT_EQ(top[0], (hot_key{"hotKeys[0]", "arg[0]", "bob", 9, false}));
  EXPECT_EQ(top[1], (hot_key{"hotKeys[0]", "arg[0]", "42", 7, false}));
  EXPECT_EQ(top[2], (hot_key{"hotKeys[0]", "arg[0]", "alice", 5, false}));
}

TEST_F(HotKeys, AnUnknownResourceHasNoHotKeys) {
  load({.hot_keys = {hot_rule(1)}});
  hit("alice", 5);
  EXPECT_TRUE(eng.hot_keys("GET:/nothing").empty());
  EXPECT_FALSE(eng.is_hot("GET:/nothing", "alice"));
}

TEST_F(HotKeys, AValueIsHotOnlyAboveTheThreshold) {
  load({.hot_keys = {hot_rule(10)}});
  hit("alice", 10);
  EXPECT_FALSE(eng.is_hot(users, "alice")) << "10 requests is not above a threshold of 10";
  EXPECT_FALSE(eng.hot_keys(users).at(0).hot);
  hit("alice");
  EXPECT_TRUE(eng.is_hot(users, "alice"));
  EXPECT_TRUE(eng.hot_keys(users).at(0).hot);
  EXPECT_FALSE(eng.is_hot(users, "bob"));
}

TEST_F(HotKeys, CountsLeaveTheSlidingWindow) {
  load({.hot_keys = {hot_rule(5, 2)}});  // 2 s in buckets of 200 ms
  hit("alice", 6);
  clock.advance_ms(1000);
  hit("alice", 3);
  EXPECT_EQ(eng.hot_keys(users).at(0).count, 9u);
  EXPECT_TRUE(eng.is_hot(users, "alice"));
  clock.advance_ms(1000);  // the first 6 are now older than the window
  EXPECT_EQ(eng.hot_keys(users).at(0).count, 3u);
  EXPECT_FALSE(eng.is_hot(users, "alice"));
  clock.advance_ms(1000);
  EXPECT_TRUE(eng.hot_keys(users).empty());
}

TEST_F(HotKeys, ObserversHearEachTransitionOnceAndEventsAreCounted) {
  load({.hot_keys = {hot_rule(3, 1)}});
  observe();
  hit("alice", 4);
  hit("bob", 2);
  eng.refresh_hot_keys();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].resource, users);
  EXPECT_EQ(events[0].rule, "hotKeys[0]");
  EXPECT_EQ(events[0].value, "alice");
  EXPECT_EQ(events[0].count, 4u);
  EXPECT_TRUE(events[0].hot);
  eng.refresh_hot_keys();
  EXPECT_EQ(events.size(), 1u) << "still hot: no new transition";

  clock.advance_ms(1000);
  eng.refresh_hot_keys();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].value, "alice");
  EXPECT_FALSE(events[1].hot);

  hit("alice", 4);
  const auto stats = eng.hot_key_stats();
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].resource, users);
  EXPECT_EQ(stats[0].rule, "hotKeys[0]");
  EXPECT_EQ(stats[0].hot_values, 1u);
  EXPECT_EQ(stats[0].top_count, 4u);
  EXPECT_EQ(stats[0].events, 2u) << "two cold -> hot transitions";
  EXPECT_EQ(events.size(), 3u);
}

TEST_F(HotKeys, ParamFlowRulesTrackTheirValuesWithTheirCountAsThreshold) {
  param_flow_rule limit;
  limit.name = "per-user";
  limit.resource = std::string(users);
  limit.param_idx = 0;
  limit.count = 3;
  load({.param_flow = {limit}});
  hit("alice", 5);  // 3 pass, 2 blocked: every request is counted
  hit("bob", 2);
  const auto top = eng.hot_keys(users);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0], (hot_key{"per-user", "arg[0]", "alice", 5, true}));
  EXPECT_EQ(top[1], (hot_key{"per-user", "arg[0]", "bob", 2, false}));
  EXPECT_TRUE(eng.is_hot(users, "alice"));
}

// A paramFlow rule's tracker exports the same counter as a hotKeys rule's: a changed rule's
// events go on from its predecessor's, and the stats say how many it carried.
TEST_F(HotKeys, AChangedParamFlowRulesEventsGoOnFromItsPredecessors) {
  param_flow_rule limit;
  limit.resource = std::string(users);
  limit.param_idx = 0;
  limit.count = 3;
  load({.param_flow = {limit}});
  hit("alice", 4);
  eng.refresh_hot_keys();
  auto stats = eng.hot_key_stats();
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].rule, "paramFlow[0]");
  EXPECT_EQ(stats[0].events, 1u);
  EXPECT_EQ(stats[0].carried_events, 0u);
  limit.count = 2;
  load({.param_flow = {limit}});
  hit("bob", 3);
  stats = eng.hot_key_stats();
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].events, 2u) << "alice before the change, bob after";
  EXPECT_EQ(stats[0].carried_events, 1u);
}

TEST_F(HotKeys, ParamFlowTrackingCanBeTurnedOff) {
  engine quiet{engine_options{.time = &clock, .track_param_flow_values = false}};
  param_flow_rule limit;
  limit.resource = std::string(users);
  limit.param_idx = 0;
  limit.count = 3;
  ASSERT_TRUE(quiet.load_rules({.param_flow = {limit}}));
  context c{quiet, "http-inbound"};
  const std::array<param_value, 1> args{param_value{"alice"}};
  for (int i = 0; i < 5; ++i) {
    auto e = quiet.enter(c, users, {.type = entry_type::inbound, .args = args});
  }
  EXPECT_TRUE(quiet.hot_keys(users).empty());
  EXPECT_TRUE(quiet.hot_key_stats().empty());
}

TEST_F(HotKeys, AReloadKeepsTheCountsOfAnUnchangedRuleAndStartsAChangedOneFresh) {
  flow_rule other{.resource = "GET:/hello", .count = 10};
  load({.hot_keys = {hot_rule(3), hot_rule(4)}});
  hit("alice", 5);
  observe();
  eng.refresh_hot_keys();
  ASSERT_EQ(events.size(), 2u) << "hot for both rules";

  // Unchanged rules, another rule added: the counts and the hot sets carry over.
  load({.flow = {other}, .hot_keys = {hot_rule(3), hot_rule(4)}});
  eng.refresh_hot_keys();
  EXPECT_EQ(events.size(), 2u) << "no transition from a reload of unchanged rules";
  auto top = eng.hot_keys(users);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].count, 5u);
  EXPECT_EQ(top[1].count, 5u);

  // The second rule changes: its window starts empty, the first keeps its counts. Its events
  // (a counter, floodgate_hot_key_events_total) go on from its predecessor's under the label.
  load({.flow = {other}, .hot_keys = {hot_rule(3), hot_rule(4, 10)}});
  top = eng.hot_keys(users);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].rule, "hotKeys[0]");
  EXPECT_EQ(top[0].count, 5u);
  const auto stats = eng.hot_key_stats();
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[1].top_count, 0u);
  EXPECT_EQ(stats[1].events, 1u);
}

// A scrape reads the events at its own pace: those counted between the last scrape and a change
// of the rule were lost with the tracker the change replaced.
TEST_F(HotKeys, AChangedRulesEventsGoOnFromThoseOfTheRuleItReplacesUnderTheSameLabel) {
  hot_keys_rule named = hot_rule(3);
  named.name = "hot-users";
  load({.hot_keys = {named, hot_rule(3)}});
  hit("alice", 4);
  eng.refresh_hot_keys();  // alice hot for both: one event each
  named.threshold = 2;     // changed, and now second in the file: its name is its label
  hot_keys_rule unnamed = hot_rule(3, 7);
  load({.hot_keys = {unnamed, named}});
  const auto stats = eng.hot_key_stats();
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[0].rule, "hotKeys[0]");
  EXPECT_EQ(stats[0].events, 0u) << "hotKeys[0] was the named rule: not the same label";
  EXPECT_EQ(stats[1].rule, "hot-users");
  EXPECT_EQ(stats[1].events, 1u);
}

TEST_F(HotKeys, EntriesWithoutTheParameterAreNotCounted) {
  load({.hot_keys = {hot_rule(1)}});
  for (int i = 0; i < 3; ++i) {
    auto e = eng.enter(ctx, users, {.type = entry_type::inbound});
  }
  EXPECT_TRUE(eng.hot_keys(users).empty());
}

TEST_F(HotKeys, TheTickerRefreshesForObservers) {
  // Declared before the engine: its ticker may call the observer until the engine is gone.
  std::mutex mutex;
  std::condition_variable told;
  bool hot = false;
  engine ticking{engine_options{.time = &clock, .hot_key_refresh_ms = 1}};
  ASSERT_TRUE(ticking.load_rules({.hot_keys = {hot_rule(0)}}));
  ticking.add_hot_key_observer([&](const hot_key_event& e) {
    const std::lock_guard lock(mutex);
    hot = e.hot;
    told.notify_all();
  });
  context c{ticking, "http-inbound"};
  const std::array<param_value, 1> args{param_value{"alice"}};
  auto e = ticking.enter(c, users, {.type = entry_type::inbound, .args = args});
  std::unique_lock lock(mutex);
  told.wait(lock, [&] { return hot; });  // no refresh_hot_keys() here: the ticker did it
  EXPECT_TRUE(hot);
}

}  // namespace
}  // namespace floodgate
