#include <floodgate/beast/cluster_metrics_collector.hpp>

#include "metric_names.hpp"

#include <array>
#include <limits>
#include <string>

namespace floodgate::beast {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

constexpr std::array<std::string_view, cluster::lease_result_count> result_names = {
    "granted", "exhausted", "error", "timeout"};

ClientMetric with_labels(std::vector<ClientMetric::Label> labels) {
  ClientMetric m;
  m.label = std::move(labels);
  return m;
}

MetricFamily family(const metrics::metric_info& m, MetricType type) {
  return MetricFamily{std::string(m.name), std::string(m.help), type, {}};
}

}  // namespace

std::vector<MetricFamily> cluster_metrics_collector::Collect() const {
  const cluster::redis_cluster_status s = status_();
  std::vector<MetricFamily> out;

  auto requests = family(metrics::cluster_lease_requests_total, MetricType::Counter);
  for (std::size_t i = 0; i < result_names.size(); ++i) {
    auto m = with_labels({{std::string(metrics::label_result), std::string(result_names[i])}});
    m.counter.value = static_cast<double>(s.lease_requests[i]);
    requests.metric.push_back(std::move(m));
  }
  out.push_back(std::move(requests));

  auto rtt = family(metrics::cluster_redis_round_trip_seconds, MetricType::Histogram);
  ClientMetric h;
  h.histogram.sample_count = s.round_trips;
  h.histogram.sample_sum = s.round_trip_sum_seconds;
  for (std::size_t i = 0; i < s.round_trip_bounds.size() && i < s.round_trip_buckets.size(); ++i) {
    h.histogram.bucket.push_back({s.round_trip_buckets[i], s.round_trip_bounds[i]});
  }
  h.histogram.bucket.push_back({s.round_trips, std::numeric_limits<double>::infinity()});
  rtt.metric.push_back(std::move(h));
  out.push_back(std::move(rtt));

  auto mode = family(metrics::cluster_mode, MetricType::Gauge);
  auto spent = family(metrics::cluster_lease_passes_spent_total, MetricType::Counter);
  for (const auto& r : s.rules) {
    const bool global = r.mode == cluster_mode::global;
    for (const std::string_view name : {std::string_view("global"), std::string_view("fallback")}) {
      auto m = with_labels({{std::string(metrics::label_resource), r.resource},
                            {std::string(metrics::label_rule), r.rule},
                            {std::string(metrics::label_mode), std::string(name)}});
      m.gauge.value = (name == "global") == global ? 1 : 0;
      mode.metric.push_back(std::move(m));
    }
    auto m = with_labels({{std::string(metrics::label_resource), r.resource},
                          {std::string(metrics::label_rule), r.rule}});
    m.counter.value = static_cast<double>(r.spent);
    spent.metric.push_back(std::move(m));
  }
  out.push_back(std::move(mode));
  out.push_back(std::move(spent));
  return out;
}

}  // namespace floodgate::beast
