// The Prometheus collector in process: names, types, labels and exact values (SPEC §6).
#include "metric_names.hpp"
#include <floodgate/beast/metrics_collector.hpp>
#include <floodgate/beast/metrics_handler.hpp>
#include <floodgate/config/rule_file_watcher.hpp>
#include <floodgate/chain/clock.hpp>
#include <floodgate/system/manual_system_status.hpp>

#include "support/demo_process.hpp"
#include "support/metrics_text.hpp"

#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <memory>

namespace floodgate::beast {
namespace {

using test::label_map;
using test::sample;

class MetricsCollectorTest : public ::testing::Test {
 protected:
  MetricsCollectorTest() : status_(std::make_shared<manual_system_status>()) {
    engine_options o;
    o.time = &clock_;
    o.system_status = status_;
    engine_ = std::make_unique<engine>(o);
    status_->set_cpu_usage(0.25);
    status_->set_load1(1.5);
  }

  void load(const rule_set& rules) { ASSERT_TRUE(engine_->load_rules(rules).ok()); }

  /// Enters and exits `resource` once; returns whether it passed.
  bool request(std::string_view resource, std::int64_t duration_ms = 0, bool error = false) {
    context ctx{*engine_, "http-inbound"};
    auto e = engine_->enter(ctx, resource, {.type = entry_type::inbound});
    if (!e) return false;
    clock_.advance_ms(duration_ms);
    if (error) e.trace_error();
    return true;
  }

  std::string scrape() const {
    metrics_handler h{{std::make_shared<metrics_collector>(*engine_, watcher_)}};
    return h.render();
  }

  manual_clock clock_;
  std::shared_ptr<manual_system_status> status_;
  std::unique_ptr<engine> engine_;
  const config::rule_file_watcher* watcher_ = nullptr;
};

TEST_F(MetricsCollectorTest, ExportsEveryMetricWithItsType) {
  load({.degrade = {{.resource = "GET:/hello", .time_window_sec = 1}}});
  request("GET:/hello");
  const std::string text = scrape();
  const std::pair<metrics::metric_info, const char*> expected[] = {
      {metrics::requests_total, "counter"},
      {metrics::blocked_requests_total, "counter"},
      {metrics::completed_requests_total, "counter"},
      {metrics::request_duration_seconds, "histogram"},
      {metrics::inflight_requests, "gauge"},
      {metrics::circuit_breaker_state, "gauge"},
      {metrics::circuit_breaker_transitions_total, "counter"},
      {metrics::rules, "gauge"},
      {metrics::resources, "gauge"},
      {metrics::resource_overflow_total, "counter"},
      {metrics::origin_overflow_total, "counter"},
      {metrics::context_overflow_total, "counter"},
      {metrics::context_pair_overflow_total, "counter"},
      {metrics::system_cpu_usage_ratio, "gauge"},
      {metrics::system_load1, "gauge"},
      {metrics::build_info, "gauge"},
  };
  for (const auto& [m, type] : expected) {
    EXPECT_EQ(test::metric_type(text, m.name), type) << m.name;
  }
  EXPECT_EQ(sample(text, "floodgate_build_info", {{"version", "0.1.0"}}), 1.0);
  EXPECT_EQ(sample(text, "floodgate_system_cpu_usage_ratio"), 0.25);
  EXPECT_EQ(sample(text, "floodgate_system_load1"), 1.5);
  EXPECT_EQ(sample(text, "floodgate_resources"), 1.0);
  EXPECT_EQ(sample(text, "floodgate_resource_overflow_total"), 0.0);
  EXPECT_EQ(sample(text, "floodgate_origin_overflow_total"), 0.0);
}

TEST_F(MetricsCollectorTest, EveryFamilyIsListedBeforeAnyEntryAndWithoutAWatcher) {
  const std::string text = scrape();
  for (const metrics::metric_info& m :
       {metrics::requests_total, metrics::blocked_requests_total, metrics::dry_run_blocks_total,
        metrics::completed_requests_total, metrics::request_duration_seconds,
        metrics::inflight_requests, metrics::circuit_breaker_state,
        metrics::circuit_breaker_transitions_total, metrics::adaptive_drop_ratio, metrics::rules,
        metrics::rules_reloads_total, metrics::rules_last_reload_successful, metrics::resources,
        metrics::resource_overflow_total, metrics::origin_overflow_total,
        metrics::context_overflow_total, metrics::context_pair_overflow_total,
        metrics::system_cpu_usage_ratio, metrics::system_load1, metrics::build_info}) {
    EXPECT_NE(test::metric_type(text, m.name), "") << m.name;
  }
  EXPECT_EQ(sample(text, "floodgate_rules_last_reload_successful"), std::nullopt)
      << "no watcher, no reload to report";
  EXPECT_EQ(sample(text, "floodgate_resources"), 0.0);
}

TEST(MetricsCollectorCaps, EntriesPastTheContextCapsAreCounted) {
  engine eng{engine_options{.limits = {.max_contexts = 1, .max_default_nodes = 1}}};
  const auto enter_in = [&](std::string_view context_name, std::string_view resource) {
    context ctx{eng, context_name};
    return eng.enter(ctx, resource).passed();
  };
  EXPECT_TRUE(enter_in("first", "a"));   // the one context name, the one pair
  EXPECT_TRUE(enter_in("first", "b"));   // a second pair: the resource's overflow node
  EXPECT_TRUE(enter_in("second", "a"));  // a second context name: a null context
  EXPECT_TRUE(enter_in("third", "a"));
  metrics_handler h{{std::make_shared<metrics_collector>(eng, nullptr)}};
  const std::string text = h.render();
  EXPECT_EQ(sample(text, "floodgate_context_overflow_total"), 2.0) << text;
  EXPECT_EQ(sample(text, "floodgate_context_pair_overflow_total"), 1.0) << text;
}

TEST_F(MetricsCollectorTest, CountersEqualTheEntries) {
  load({.flow = {{.resource = "GET:/hello", .count = 3}}});
  int passed = 0;
  int blocked = 0;
  for (int i = 0; i < 5; ++i) (request("GET:/hello", 0, i == 0) ? passed : blocked)++;
  ASSERT_EQ(passed, 3);
  const std::string text = scrape();
  const auto res = [](const char* k, const char* v) {
    return label_map{{"resource", "GET:/hello"}, {k, v}};
  };
  EXPECT_EQ(sample(text, "floodgate_requests_total", res("result", "passed")), 3.0);
  EXPECT_EQ(sample(text, "floodgate_requests_total", res("result", "blocked")), 2.0);
  EXPECT_EQ(sample(text, "floodgate_blocked_requests_total", res("reason", "flow")), 2.0);
  for (const char* r : {"param_flow", "degrade", "system", "authority"}) {
    EXPECT_EQ(sample(text, "floodgate_blocked_requests_total", res("reason", r)), 0.0) << r;
  }
  EXPECT_EQ(sample(text, "floodgate_completed_requests_total", res("outcome", "success")), 2.0);
  EXPECT_EQ(sample(text, "floodgate_completed_requests_total", res("outcome", "error")), 1.0);
  EXPECT_EQ(sample(text, "floodgate_inflight_requests", {{"resource", "GET:/hello"}}), 0.0);
  EXPECT_EQ(sample(text, "floodgate_rules", {{"type", "flow"}}), 1.0);
  EXPECT_EQ(sample(text, "floodgate_rules", {{"type", "param_flow"}}), 0.0);
}

TEST_F(MetricsCollectorTest, DryRunRulesWouldBeBlocksAreCountedAndTheRequestsPass) {
  load({.flow = {{.resource = "GET:/hello", .count = 2, .dry_run = true},
                 {.resource = "GET:/hello", .count = 3, .dry_run = true}}});
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(request("GET:/hello"));
  request("GET:/other");
  const std::string text = scrape();
  EXPECT_EQ(test::metric_type(text, "floodgate_dry_run_blocks_total"), "counter");
  // The count-2 rule would have blocked three of the five, the count-3 rule two.
  EXPECT_EQ(sample(text, "floodgate_dry_run_blocks_total", {{"resource", "GET:/hello"}}), 5.0);
  EXPECT_EQ(sample(text, "floodgate_dry_run_blocks_total", {{"resource", "GET:/other"}}),
            std::nullopt)
      << "a resource nothing would have blocked has no series";
  EXPECT_EQ(
      sample(text, "floodgate_requests_total", {{"resource", "GET:/hello"}, {"result", "passed"}}),
      5.0);
  EXPECT_EQ(
      sample(text, "floodgate_requests_total", {{"resource", "GET:/hello"}, {"result", "blocked"}}),
      0.0);
}

TEST_F(MetricsCollectorTest, InflightGaugeCountsOpenEntries) {
  context ctx{*engine_, "http-inbound"};
  auto e = engine_->enter(ctx, "GET:/work", {.type = entry_type::inbound});
  EXPECT_EQ(sample(scrape(), "floodgate_inflight_requests", {{"resource", "GET:/work"}}), 1.0);
  e.exit();
  EXPECT_EQ(sample(scrape(), "floodgate_inflight_requests", {{"resource", "GET:/work"}}), 0.0);
}

TEST_F(MetricsCollectorTest, DurationHistogramIsCumulativeInSeconds) {
  request("GET:/work", 30);
  request("GET:/work", 300);
  const std::string text = scrape();
  const auto le = [&](const char* bound) {
    return sample(text, "floodgate_request_duration_seconds_bucket",
                  {{"resource", "GET:/work"}, {"le", bound}});
  };
  EXPECT_EQ(le("0.025"), 0.0);
  EXPECT_EQ(le("0.05"), 1.0);
  EXPECT_EQ(le("0.25"), 1.0);
  EXPECT_EQ(le("0.5"), 2.0);
  EXPECT_EQ(le("+Inf"), 2.0);
  EXPECT_EQ(sample(text, "floodgate_request_duration_seconds_count", {{"resource", "GET:/work"}}),
            2.0);
  EXPECT_NEAR(*sample(text, "floodgate_request_duration_seconds_sum", {{"resource", "GET:/work"}}),
              0.33, 1e-9);
}

TEST_F(MetricsCollectorTest, BreakerStateIsAStateSetAndTransitionsAreCounted) {
  load({.degrade = {{.resource = "GET:/a",
                     .grade = degrade_grade::error_count,
                     .count = 1,
                     .min_request_amount = 1,
                     .time_window_sec = 10},
                    {.name = "b-slow", .resource = "GET:/b", .count = 100, .time_window_sec = 1}}});
  for (int i = 0; i < 5; ++i) request("GET:/a", 0, true);
  const std::string text = scrape();
  const auto state = [&](const char* res, const char* rule, const char* s) {
    return sample(text, "floodgate_circuit_breaker_state",
                  {{"resource", res}, {"rule", rule}, {"state", s}});
  };
  EXPECT_EQ(state("GET:/a", "degrade[0]", "open"), 1.0);
  EXPECT_EQ(state("GET:/a", "degrade[0]", "closed"), 0.0);
  EXPECT_EQ(state("GET:/a", "degrade[0]", "half_open"), 0.0);
  EXPECT_EQ(state("GET:/b", "b-slow", "closed"), 1.0);
  EXPECT_EQ(
      sample(text, "floodgate_circuit_breaker_transitions_total",
             {{"resource", "GET:/a"}, {"rule", "degrade[0]"}, {"from", "closed"}, {"to", "open"}}),
      1.0);
  EXPECT_EQ(
      sample(
          text, "floodgate_circuit_breaker_transitions_total",
          {{"resource", "GET:/a"}, {"rule", "degrade[0]"}, {"from", "open"}, {"to", "half_open"}}),
      0.0);
}

TEST_F(MetricsCollectorTest, AnAdaptiveBreakerExportsItsDropRatioAndAStateButNoTransitions) {
  clock_.advance_ms(1'000'000);  // a bucket boundary of the 10 s window
  load({.degrade = {{.resource = "GET:/a",
                     .grade = degrade_grade::error_count,
                     .count = 100,
                     .time_window_sec = 10},
                    {.name = "a-sre",
                     .resource = "GET:/a",
                     .grade = degrade_grade::adaptive,
                     .stat_interval_ms = 10'000,
                     .k = 1.5}}});
  for (int i = 0; i < 10; ++i) request("GET:/a", 0, i < 6);  // 10 requests, 4 accepts
  const std::string text = scrape();
  EXPECT_EQ(test::metric_type(text, metrics::adaptive_drop_ratio.name), "gauge");
  EXPECT_DOUBLE_EQ(
      sample(text, "floodgate_adaptive_drop_ratio", {{"resource", "GET:/a"}, {"rule", "a-sre"}})
          .value_or(-1),
      (10 - 1.5 * 4) / 11);
  // The binary breaker's series are as before. The adaptive one has a state too, one of the
  // three: open while it drops a share. It makes no transitions, so it has no transition series.
  EXPECT_EQ(sample(text, "floodgate_circuit_breaker_state",
                   {{"resource", "GET:/a"}, {"rule", "degrade[0]"}, {"state", "closed"}}),
            1.0);
  for (const auto& [state, value] :
       {std::pair{"closed", 0.0}, std::pair{"open", 1.0}, std::pair{"half_open", 0.0}}) {
    EXPECT_EQ(sample(text, "floodgate_circuit_breaker_state",
                     {{"resource", "GET:/a"}, {"rule", "a-sre"}, {"state", state}}),
              value)
        << state;
  }
  EXPECT_EQ(text.find("state=\"adaptive\""), std::string::npos);
  EXPECT_EQ(text.find("rule=\"a-sre\",from"), std::string::npos);
  const auto checked = test::promtool_check(text);
  if (!checked) GTEST_SKIP() << "promtool is not installed";
  EXPECT_TRUE(checked->ok) << checked->output;
  EXPECT_EQ(checked->output, "");
}

/// An error-count breaker on GET:/a that opens on its second error.
degrade_rule opens_on_second_error() {
  return {.resource = "GET:/a",
          .grade = degrade_grade::error_count,
          .count = 1,
          .min_request_amount = 1,
          .time_window_sec = 10};
}

/// GET:/a's `from` -> `to` transitions under `rule`, in the exposition `text`.
std::optional<double> transitions(const std::string& text, const char* rule, const char* from,
                                  const char* to) {
  return sample(text, "floodgate_circuit_breaker_transitions_total",
                {{"resource", "GET:/a"}, {"rule", rule}, {"from", from}, {"to", to}});
}

/// GET:/a's closed -> open transitions under `rule`, as a scrape of `h` shows them.
std::optional<double> times_opened(const metrics_handler& h, const char* rule = "degrade[0]") {
  return transitions(h.render(), rule, "closed", "open");
}

TEST_F(MetricsCollectorTest, TransitionsStayMonotonicWhenAReloadReplacesTheBreaker) {
  degrade_rule rule = opens_on_second_error();
  const metrics_handler h{{std::make_shared<metrics_collector>(*engine_)}};
  const auto opened = [&] { return times_opened(h); };
  load({.degrade = {rule}});
  for (int i = 0; i < 2; ++i) request("GET:/a", 0, true);
  EXPECT_EQ(opened(), 1.0);

  rule.count = 2;  // a changed rule starts fresh: a new breaker under the same labels
  load({.degrade = {rule}});
  EXPECT_EQ(opened(), 1.0);
  for (int i = 0; i < 3; ++i) request("GET:/a", 0, true);
  EXPECT_EQ(opened(), 2.0);
}

// What a scrape had not seen when the rule changed was lost with the breaker it replaced: a
// trip followed by a reload before the next scrape read 0 transitions.
TEST_F(MetricsCollectorTest, ATransitionNoScrapeSawBeforeAReloadIsStillCounted) {
  degrade_rule rule = opens_on_second_error();
  const metrics_handler h{{std::make_shared<metrics_collector>(*engine_)}};
  const auto opened = [&] { return times_opened(h); };
  load({.degrade = {rule}});
  EXPECT_EQ(opened(), 0.0);
  for (int i = 0; i < 2; ++i) request("GET:/a", 0, true);  // trips; no scrape before the change
  rule.time_window_sec = 11;
  load({.degrade = {rule}});
  EXPECT_EQ(opened(), 1.0);
  for (int i = 0; i < 3; ++i) request("GET:/a", 0, true);
  EXPECT_EQ(opened(), 2.0);
}

// A label gone for a while comes back with a breaker that carried nothing: what the scrapes saw
// before is kept, and its own transitions add to it.
TEST_F(MetricsCollectorTest, TransitionsOfALabelThatComesBackAddToWhatWasSeenBefore) {
  const degrade_rule rule = opens_on_second_error();
  const metrics_handler h{{std::make_shared<metrics_collector>(*engine_)}};
  load({.degrade = {rule}});
  for (int i = 0; i < 2; ++i) request("GET:/a", 0, true);
  EXPECT_EQ(times_opened(h), 1.0);
  load({});
  EXPECT_EQ(times_opened(h), std::nullopt);
  load({.degrade = {rule}});
  clock_.advance_ms(20'000);  // past the first breaker's window
  for (int i = 0; i < 2; ++i) request("GET:/a", 0, true);
  EXPECT_EQ(times_opened(h), 2.0);
}

// An audit: two unnamed breakers that swapped places in the file (both unchanged, so both kept
// their state) took their transition counts to their new labels, and the series of a breaker
// that had never opened jumped to 1: three transitions read as six.
TEST_F(MetricsCollectorTest, ABreakerThatMovesToAnotherLabelDoesNotTakeItsCountsThere) {
  const degrade_rule trips = opens_on_second_error();
  degrade_rule never = opens_on_second_error();
  never.count = 1'000;
  const metrics_handler h{{std::make_shared<metrics_collector>(*engine_)}};
  const auto opened = [&](const char* rule) { return times_opened(h, rule); };
  load({.degrade = {trips, never}});
  for (int i = 0; i < 2; ++i) request("GET:/a", 0, true);
  EXPECT_EQ(opened("degrade[0]"), 1.0);
  EXPECT_EQ(opened("degrade[1]"), 0.0);
  for (int swap = 0; swap < 3; ++swap) {
    load({.degrade = swap % 2 == 0 ? std::vector{never, trips} : std::vector{trips, never}});
    // The one transition was made under degrade[0]; neither series moves.
    EXPECT_EQ(opened("degrade[0]"), 1.0) << swap;
    EXPECT_EQ(opened("degrade[1]"), 0.0) << swap;
  }
  // Now under degrade[1], the breaker's next transition counts there.
  clock_.advance_ms(10'000);
  request("GET:/a", 0, true);  // the probe fails: half-open, then open again
  const std::string text = h.render();
  EXPECT_EQ(transitions(text, "degrade[1]", "half_open", "open"), 1.0);
  EXPECT_EQ(transitions(text, "degrade[0]", "half_open", "open"), 0.0);
}

// Review: a breaker that moved away (a rule of another resource put before it) and back found its
// old series still named it, and took there the transitions it made under the other label.
TEST_F(MetricsCollectorTest, ABreakerThatMovesAwayAndBackDoesNotBringTheCountsMadeAway) {
  const degrade_rule trips = opens_on_second_error();
  degrade_rule other = opens_on_second_error();
  other.resource = "GET:/b";
  const metrics_handler h{{std::make_shared<metrics_collector>(*engine_)}};
  const auto opened = [&](const char* rule) { return times_opened(h, rule); };
  load({.degrade = {trips}});
  EXPECT_EQ(opened("degrade[0]"), 0.0);
  load({.degrade = {other, trips}});  // unchanged: the same breaker, now degrade[1]
  EXPECT_EQ(opened("degrade[1]"), 0.0);
  for (int i = 0; i < 2; ++i) request("GET:/a", 0, true);
  EXPECT_EQ(opened("degrade[1]"), 1.0);
  load({.degrade = {trips}});  // back to degrade[0]
  EXPECT_EQ(opened("degrade[0]"), 0.0) << "the transition was made under degrade[1]";
  EXPECT_EQ(opened("degrade[1]"), std::nullopt);
}

// The same for hot-key trackers: two unnamed hotKeys rules that swap places keep their events
// where they were made (the swapped-in tracker's events used to add to the other series).
TEST_F(MetricsCollectorTest, AHotKeyTrackerThatMovesToAnotherLabelDoesNotTakeItsEventsThere) {
  const hot_keys_rule first{.resource = "GET:/a", .param_idx = 0, .threshold = 0};
  const hot_keys_rule second{.resource = "GET:/a", .param_idx = 1, .threshold = 0};
  const metrics_handler h{{std::make_shared<metrics_collector>(*engine_)}};
  const auto events = [&](const char* rule) {
    return sample(h.render(), "floodgate_hot_key_events_total",
                  {{"resource", "GET:/a"}, {"rule", rule}});
  };
  const auto enter_with = [&](const char* a, const char* b) {
    const param_value args[] = {param_value{std::string_view{a}}, param_value{std::string_view{b}}};
    context ctx{*engine_, "http-inbound"};
    ASSERT_TRUE(engine_->enter(ctx, "GET:/a", {.type = entry_type::inbound, .args = args}));
  };
  load({.hot_keys = {first, second}});
  enter_with("x", "y");
  EXPECT_EQ(events("hotKeys[0]"), 1.0);  // x became hot
  EXPECT_EQ(events("hotKeys[1]"), 1.0);  // y became hot
  enter_with("x2", "y");
  EXPECT_EQ(events("hotKeys[0]"), 2.0);
  EXPECT_EQ(events("hotKeys[1]"), 1.0);
  for (int swap = 0; swap < 3; ++swap) {
    load({.hot_keys = swap % 2 == 0 ? std::vector{second, first} : std::vector{first, second}});
    EXPECT_EQ(events("hotKeys[0]"), 2.0) << swap;
    EXPECT_EQ(events("hotKeys[1]"), 1.0) << swap;
  }
}

TEST_F(MetricsCollectorTest, ReloadMetricsComeFromTheWatcher) {
  test::rules_dir dir{"flow: [{resource: a, count: 1}]\n"};
  boost::asio::io_context io;
  config::rule_file_watcher watcher{io.get_executor(), *engine_, dir.path()};
  ASSERT_TRUE(watcher.start().ok());
  watcher_ = &watcher;
  const std::string text = scrape();
  EXPECT_EQ(sample(text, "floodgate_rules_reloads_total", {{"result", "success"}}), 1.0);
  EXPECT_EQ(sample(text, "floodgate_rules_reloads_total", {{"result", "error"}}), 0.0);
  EXPECT_EQ(sample(text, "floodgate_rules_last_reload_successful"), 1.0);
  EXPECT_EQ(test::metric_type(text, "floodgate_rules_reloads_total"), "counter");
  EXPECT_EQ(test::metric_type(text, "floodgate_rules_last_reload_successful"), "gauge");
  watcher.stop();
}

TEST_F(MetricsCollectorTest, NoOriginPathOrPidLabels) {
  context ctx{*engine_, "http-inbound", "some-origin"};
  { auto e = engine_->enter(ctx, "GET:/hello", {.type = entry_type::inbound}); }
  const std::string text = scrape();
  EXPECT_EQ(text.find("some-origin"), std::string::npos);
  EXPECT_EQ(text.find("pid="), std::string::npos);
}

TEST_F(MetricsCollectorTest, ExpositionPassesPromtool) {
  load({.flow = {{.resource = "GET:/hello", .count = 1}},
        .degrade = {{.resource = "GET:/hello", .time_window_sec = 1}}});
  for (int i = 0; i < 3; ++i) request("GET:/hello", 7, i == 1);
  request("weird \"name\"\\");
  const auto checked = test::promtool_check(scrape());
  if (!checked) GTEST_SKIP() << "promtool is not installed";
  EXPECT_TRUE(checked->ok) << checked->output;
  EXPECT_EQ(checked->output, "");
}

TEST(MetricsHandler, AnswersWithTheExpositionContentType) {
  metrics_handler h;
  const auto res = h.response(11, true);
  EXPECT_EQ(res.result_int(), 200u);
  EXPECT_EQ(res[http::field::content_type], "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_TRUE(res.keep_alive());
}

}  // namespace
}  // namespace floodgate::beast
