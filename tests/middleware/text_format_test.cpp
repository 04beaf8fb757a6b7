#include "text_format.hpp"

#include "support/metrics_text.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/summary.h>
#include <prometheus/text_serializer.h>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace floodgate::beast {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

std::string render(const std::vector<MetricFamily>& families) {
  std::string out;
  write_text_format(families, out);
  return out;
}

TEST(TextFormat, WritesHelpTypeAndSamples) {
  ClientMetric m;
  m.label = {{"resource", "GET:/a"}, {"result", "passed"}};
  m.counter.value = 42;
  const std::string text =
      render({{"x_requests_total", "Requests.", MetricType::Counter, {m}}});
  EXPECT_EQ(text,
            "# HELP x_requests_total Requests.\n"
            "# TYPE x_requests_total counter\n"
            "x_requests_total{resource=\"GET:/a\",result=\"passed\"} 42\n");
}

TEST(TextFormat, EscapesLabelValuesAndHelp) {
  ClientMetric m;
  m.label = {{"resource", "a\"b\\c\nd"}};
  m.gauge.value = 0.5;
  const std::string text = render({{"x", "line\\one\ntwo", MetricType::Gauge, {m}}});
  EXPECT_EQ(text,
            "# HELP x line\\\\one\\ntwo\n"
            "# TYPE x gauge\n"
            "x{resource=\"a\\\"b\\\\c\\nd\"} 0.5\n");
}

TEST(TextFormat, LabelValuesAreValidUtf8) {
  ClientMetric m;
  m.label = {{"resource", "caf\xc3\xa9 \xff\"\xc0"}};
  m.gauge.value = 1;
  EXPECT_EQ(render({{"x", "h", MetricType::Gauge, {m}}}),
            "# HELP x h\n# TYPE x gauge\n"
            "x{resource=\"caf\xc3\xa9 \xef\xbf\xbd\\\"\xef\xbf\xbd\"} 1\n");
}

TEST(TextFormat, WritesSpecialValues) {
  ClientMetric nan;
  nan.gauge.value = std::nan("");
  ClientMetric inf;
  inf.gauge.value = std::numeric_limits<double>::infinity();
  ClientMetric big;
  big.gauge.value = 1e20;
  const std::string text = render({{"x", "", MetricType::Gauge, {nan, inf, big}}});
  EXPECT_EQ(text, "# TYPE x gauge\nx NaN\nx +Inf\nx 1e+20\n");
}

TEST(TextFormat, HistogramGetsAnInfBucketSumAndCount) {
  ClientMetric m;
  m.label = {{"resource", "r"}};
  m.histogram.sample_count = 3;
  m.histogram.sample_sum = 0.75;
  m.histogram.bucket = {{1, 0.1}, {2, 1.0}};
  const std::string text = render({{"x_seconds", "", MetricType::Histogram, {m}}});
  EXPECT_EQ(text,
            "# TYPE x_seconds histogram\n"
            "x_seconds_bucket{resource=\"r\",le=\"0.1\"} 1\n"
            "x_seconds_bucket{resource=\"r\",le=\"1\"} 2\n"
            "x_seconds_bucket{resource=\"r\",le=\"+Inf\"} 3\n"
            "x_seconds_sum{resource=\"r\"} 0.75\n"
            "x_seconds_count{resource=\"r\"} 3\n");
}

TEST(TextFormat, EmptyFamilyHasHelpAndTypeButNoSamples) {
  const std::vector<MetricFamily> families = {{"x_total", "Help.", MetricType::Counter, {}},
                                              {"y_seconds", "", MetricType::Histogram, {}}};
  const std::string text = render(families);
  EXPECT_EQ(text,
            "# HELP x_total Help.\n"
            "# TYPE x_total counter\n"
            "# TYPE y_seconds histogram\n");
  EXPECT_EQ(text, prometheus::TextSerializer{}.Serialize(families)) << "as prometheus-cpp does";
  const auto checked = test::promtool_check(text);
  if (!checked) GTEST_SKIP() << "promtool is not installed";
  EXPECT_TRUE(checked->ok) << checked->output;
  EXPECT_EQ(checked->output, "");
}

TEST(TextFormat, RendersAPrometheusRegistryThatPassesPromtool) {
  prometheus::Registry registry;
  prometheus::BuildCounter().Name("app_events_total").Help("Events.").Register(registry)
      .Add({{"kind", "a"}}).Increment(3);
  prometheus::BuildGauge().Name("app_temperature_celsius").Help("Temp.").Register(registry)
      .Add({}).Set(21.5);
  prometheus::BuildHistogram().Name("app_latency_seconds").Help("Latency.").Register(registry)
      .Add({}, prometheus::Histogram::BucketBoundaries{0.1, 1}).Observe(0.3);
  prometheus::BuildSummary().Name("app_size_bytes").Help("Sizes.").Register(registry)
      .Add({}, prometheus::Summary::Quantiles{{0.5, 0.05}}).Observe(10);
  const std::string text = render(registry.Collect());
  EXPECT_EQ(test::sample(text, "app_events_total", {{"kind", "a"}}), 3.0);
  EXPECT_EQ(test::sample(text, "app_latency_seconds_bucket", {{"le", "1"}}), 1.0);
  EXPECT_EQ(test::sample(text, "app_size_bytes", {{"quantile", "0.5"}}), 10.0);
  const auto checked = test::promtool_check(text);
  if (!checked) GTEST_SKIP() << "promtool is not installed";
  EXPECT_TRUE(checked->ok) << checked->output << text;
}

}  // namespace
}  // namespace floodgate::beast
