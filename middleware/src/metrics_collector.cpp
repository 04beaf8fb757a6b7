#include <floodgate/beast/metrics_collector.hpp>
#include <floodgate/config/rule_file_watcher.hpp>
#include "admin_json.hpp"
#include "metric_names.hpp"

#include "node/node_registry.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#ifndef FLOODGATE_VERSION
#define FLOODGATE_VERSION "unknown"
#endif

namespace floodgate::beast {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

MetricFamily family(const metrics::metric_info& m, MetricType type) {
  return MetricFamily{std::string(m.name), std::string(m.help), type, {}};
}

ClientMetric::Label label(std::string_view name, std::string_view value) {
  return {std::string(name), std::string(value)};
}

ClientMetric counter(std::vector<ClientMetric::Label> labels, double value) {
  ClientMetric m;
  m.label = std::move(labels);
  m.counter.value = value;
  return m;
}

ClientMetric gauge(std::vector<ClientMetric::Label> labels, double value) {
  ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = value;
  return m;
}

double as_double(std::uint64_t v) { return static_cast<double>(v); }

constexpr std::array<block_reason, 5> spec_reasons = {block_reason::flow, block_reason::param_flow,
                                                      block_reason::degrade, block_reason::system,
                                                      block_reason::authority};

constexpr std::array<breaker_state, 3> breaker_states = {breaker_state::closed, breaker_state::open,
                                                         breaker_state::half_open};

/// The transitions Sentinel's state machine can make.
constexpr std::array<std::pair<breaker_state, breaker_state>, 4> breaker_transitions = {{
    {breaker_state::closed, breaker_state::open},
    {breaker_state::open, breaker_state::half_open},
    {breaker_state::half_open, breaker_state::open},
    {breaker_state::half_open, breaker_state::closed},
}};

/// Reads one of the engine's cumulative counters (an atomic, or a sharded counter).
template <class Counter>
std::uint64_t load(const Counter& c) {
  return c.load(std::memory_order_acquire);
}

}  // namespace

metrics_collector::metrics_collector(const engine& eng, const config::rule_file_watcher* watcher)
    : engine_(eng), watcher_(watcher) {
  // Started with the collector, not at the first scrape, so that one reads numbers, not NaN.
  if (!engine_.system_status()) status_ = process_system_status();
}

metrics_collector::~metrics_collector() = default;

std::vector<MetricFamily> metrics_collector::Collect() const {
  const std::lock_guard lock(mutex_);
  std::vector<MetricFamily> out;
  out.reserve(16);
  collect_resources(out);
  collect_breakers(out);
  collect_rules(out);
  collect_hot_keys(out);
  collect_process(out);
  return out;
}

void metrics_collector::collect_resources(std::vector<MetricFamily>& out) const {
  std::vector<const node::cluster_node*> nodes;
  nodes.reserve(engine_.nodes().resource_count());
  engine_.nodes().for_each_resource([&](const node::cluster_node& n) { nodes.push_back(&n); });
  std::sort(nodes.begin(), nodes.end(),
            [](const auto* a, const auto* b) { return a->name() < b->name(); });

  auto requests = family(metrics::requests_total, MetricType::Counter);
  auto blocked = family(metrics::blocked_requests_total, MetricType::Counter);
  auto dry_run = family(metrics::dry_run_blocks_total, MetricType::Counter);
  auto completed = family(metrics::completed_requests_total, MetricType::Counter);
  auto duration = family(metrics::request_duration_seconds, MetricType::Histogram);
  auto inflight = family(metrics::inflight_requests, MetricType::Gauge);
  requests.metric.reserve(2 * nodes.size());
  blocked.metric.reserve(spec_reasons.size() * nodes.size());
  completed.metric.reserve(2 * nodes.size());
  duration.metric.reserve(nodes.size());
  inflight.metric.reserve(nodes.size());

  for (const node::cluster_node* n : nodes) {
    const auto& t = n->totals();
    const std::string& name = n->name();
    // success = completed - errors comes from two counters. Completions are read before errors
    // so that, with exits counting an error before its completion, an error in progress is
    // never reported as a success; the clamp keeps the series monotonic in any case.
    std::array<std::uint64_t, node::duration_buckets.size() + 1> buckets{};
    std::uint64_t done = 0;
    for (std::size_t i = 0; i < buckets.size(); ++i) {
      buckets[i] = load(t.duration[i]);
      done += buckets[i];
    }
    const double sum_seconds = as_double(load(t.duration_sum_ns)) / 1e9;
    const std::uint64_t errors = load(t.errors);
    std::uint64_t& last = last_success_[n];
    last = std::max(last, done > errors ? done - errors : 0);

    std::uint64_t blocked_sum = 0;
    for (const block_reason r : spec_reasons) {
      const std::uint64_t v = load(t.blocked[static_cast<std::size_t>(r)]);
      blocked_sum += v;
      blocked.metric.push_back(counter(
          {label(metrics::label_resource, name), label(metrics::label_reason, to_string(r))},
          as_double(v)));
    }
    // User slots' blocks are listed only when there are some.
    if (const auto custom = load(t.blocked[static_cast<std::size_t>(block_reason::custom)])) {
      blocked_sum += custom;
      blocked.metric.push_back(
          counter({label(metrics::label_resource, name), label(metrics::label_reason, "custom")},
                  as_double(custom)));
    }
    // Only resources whose dryRun rules would have blocked something have a series.
    if (const auto would_block = load(t.dry_run_blocks)) {
      dry_run.metric.push_back(
          counter({label(metrics::label_resource, name)}, as_double(would_block)));
    }
    requests.metric.push_back(
        counter({label(metrics::label_resource, name), label(metrics::label_result, "passed")},
                as_double(load(t.passed))));
    requests.metric.push_back(
        counter({label(metrics::label_resource, name), label(metrics::label_result, "blocked")},
                as_double(blocked_sum)));
    completed.metric.push_back(
        counter({label(metrics::label_resource, name), label(metrics::label_outcome, "success")},
                as_double(last)));
    completed.metric.push_back(
        counter({label(metrics::label_resource, name), label(metrics::label_outcome, "error")},
                as_double(std::min(errors, done))));

    ClientMetric h;
    h.label = {label(metrics::label_resource, name)};
    h.histogram.sample_count = done;
    h.histogram.sample_sum = sum_seconds;
    h.histogram.bucket.reserve(buckets.size());
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < node::duration_buckets.size(); ++i) {
      cumulative += buckets[i];
      h.histogram.bucket.push_back({cumulative, node::duration_buckets[i]});
    }
    h.histogram.bucket.push_back({done, std::numeric_limits<double>::infinity()});
    duration.metric.push_back(std::move(h));

    inflight.metric.push_back(
        gauge({label(metrics::label_resource, name)},
              static_cast<double>(std::max<std::int64_t>(n->concurrency(), 0))));
  }
  out.push_back(std::move(requests));
  out.push_back(std::move(blocked));
  out.push_back(std::move(dry_run));
  out.push_back(std::move(completed));
  out.push_back(std::move(duration));
  out.push_back(std::move(inflight));
}

void metrics_collector::collect_breakers(std::vector<MetricFamily>& out) const {
  auto state = family(metrics::circuit_breaker_state, MetricType::Gauge);
  auto transitions = family(metrics::circuit_breaker_transitions_total, MetricType::Counter);
  auto drop_ratio = family(metrics::adaptive_drop_ratio, MetricType::Gauge);
  const std::int64_t now_ms = engine_.time().now_ms();
  series_places places;
  engine_.for_each_breaker([&](std::string_view resource, const circuit_breaker& b,
                               std::int32_t index) {
    const std::string rule = breaker_rule_label(b, index);
    const breaker_state own = b.state();
    const std::optional<adaptive_window_state> window =
        own == breaker_state::adaptive ? b.adaptive(now_ms) : std::nullopt;
    const breaker_state current = reported_state(own, window);
    for (const breaker_state s : breaker_states) {
      state.metric.push_back(
          gauge({label(metrics::label_resource, resource), label(metrics::label_rule, rule),
                 label(metrics::label_state, to_string(s))},
                s == current ? 1.0 : 0.0));
    }
    // An adaptive breaker also has a drop ratio; it makes no transitions, so has no such series.
    if (window) {
      drop_ratio.metric.push_back(
          gauge({label(metrics::label_resource, resource), label(metrics::label_rule, rule)},
                window->drop_ratio));
      return;
    }
    // Another breaker under these labels (carried_series): a changed rule's, which carried the
    // one before's counts (transitions made after the last scrape are then not lost), one that
    // carried nothing, or an unchanged rule's that moved here with counts made elsewhere. By
    // serial, not address: a new one may reuse it.
    series_key key{std::string(resource), rule};
    auto& series = breaker_series_[key];
    std::array<std::uint64_t, breaker_transitions.size()> now{};
    std::array<std::uint64_t, breaker_transitions.size()> carried{};
    for (std::size_t i = 0; i < breaker_transitions.size(); ++i) {
      const auto [from, to] = breaker_transitions[i];
      now[i] = b.transitions(from, to);
      carried[i] = b.carried_transitions(from, to);
    }
    series.update(b.serial(), now, carried, moved(breaker_places_, b.serial(), key));
    places.emplace(b.serial(), std::move(key));
    for (std::size_t i = 0; i < breaker_transitions.size(); ++i) {
      const auto [from, to] = breaker_transitions[i];
      transitions.metric.push_back(counter(
          {label(metrics::label_resource, resource), label(metrics::label_rule, rule),
           label(metrics::label_from, to_string(from)), label(metrics::label_to, to_string(to))},
          as_double(series.value(i))));
    }
  });
  breaker_places_ = std::move(places);
  out.push_back(std::move(state));
  out.push_back(std::move(transitions));
  out.push_back(std::move(drop_ratio));
}

void metrics_collector::collect_rules(std::vector<MetricFamily>& out) const {
  const rule_set rs = engine_.rules();
  auto rules = family(metrics::rules, MetricType::Gauge);
  // The five types SPEC §6 names. hotKeys rules limit nothing; each has its own series
  // (floodgate_hot_keys and the rest), so count(floodgate_hot_keys) counts them.
  const std::pair<std::string_view, std::size_t> counts[] = {{"flow", rs.flow.size()},
                                                             {"degrade", rs.degrade.size()},
                                                             {"authority", rs.authority.size()},
                                                             {"system", rs.system.size()},
                                                             {"param_flow", rs.param_flow.size()}};
  for (const auto& [type, n] : counts) {
    rules.metric.push_back(gauge({label(metrics::label_type, type)}, as_double(n)));
  }
  out.push_back(std::move(rules));

  // Without a watcher there is no load attempt to report: the families are listed, empty.
  auto reloads = family(metrics::rules_reloads_total, MetricType::Counter);
  auto last_ok = family(metrics::rules_last_reload_successful, MetricType::Gauge);
  if (watcher_ != nullptr) {
    const config::reload_status st = watcher_->status();
    reloads.metric.push_back(
        counter({label(metrics::label_result, "success")}, as_double(st.successes)));
    reloads.metric.push_back(
        counter({label(metrics::label_result, "error")}, as_double(st.failures)));
    last_ok.metric.push_back(gauge({}, st.ok ? 1.0 : 0.0));
  }
  out.push_back(std::move(reloads));
  out.push_back(std::move(last_ok));
}

void metrics_collector::collect_hot_keys(std::vector<MetricFamily>& out) const {
  auto hot = family(metrics::hot_keys, MetricType::Gauge);
  auto top = family(metrics::hot_key_top_requests, MetricType::Gauge);
  auto events = family(metrics::hot_key_events_total, MetricType::Counter);
  series_places places;
  for (const hot_key_rule_stats& s : engine_.hot_key_stats()) {
    std::vector<ClientMetric::Label> labels{label(metrics::label_resource, s.resource),
                                            label(metrics::label_rule, s.rule)};
    hot.metric.push_back(gauge(labels, as_double(s.hot_values)));
    top.metric.push_back(gauge(labels, as_double(s.top_count)));
    // As for breakers: another tracker under these labels goes on from the one before when it
    // carried its events, else starts anew; one that moved here brings events made elsewhere.
    series_key key{s.resource, s.rule};
    auto& series = hot_key_series_[key];
    series.update(s.tracker_serial, {s.events}, {s.carried_events},
                  moved(hot_key_places_, s.tracker_serial, key));
    places.emplace(s.tracker_serial, std::move(key));
    events.metric.push_back(counter(std::move(labels), as_double(series.value(0))));
  }
  hot_key_places_ = std::move(places);
  out.push_back(std::move(hot));
  out.push_back(std::move(top));
  out.push_back(std::move(events));
}

void metrics_collector::collect_process(std::vector<MetricFamily>& out) const {
  const node::node_registry& nodes = engine_.nodes();
  auto resources = family(metrics::resources, MetricType::Gauge);
  resources.metric.push_back(gauge({}, as_double(nodes.resource_count())));
  out.push_back(std::move(resources));
  // The registry's overflow counts: one unlabelled counter each.
  const auto overflow = [&](const metrics::metric_info& m, const auto& count) {
    auto f = family(m, MetricType::Counter);
    f.metric.push_back(counter({}, as_double(load(count))));
    out.push_back(std::move(f));
  };
  overflow(metrics::resource_overflow_total, nodes.overflow().resources);
  overflow(metrics::origin_overflow_total, nodes.overflow().origins);
  overflow(metrics::context_overflow_total, nodes.overflow().contexts);
  overflow(metrics::context_pair_overflow_total, nodes.overflow().default_nodes);

  // The engine samples only once system rules exist; the metrics want readings regardless.
  std::shared_ptr<const system_status_source> status = engine_.system_status();
  if (!status) {
    if (!status_) {
      status_ = process_system_status();
    }
    status = status_;
  }
  const auto reading = [](double v) { return v < 0 ? std::nan("") : v; };
  auto cpu = family(metrics::system_cpu_usage_ratio, MetricType::Gauge);
  cpu.metric.push_back(gauge({}, reading(status->cpu_usage())));
  out.push_back(std::move(cpu));
  auto load1 = family(metrics::system_load1, MetricType::Gauge);
  load1.metric.push_back(gauge({}, reading(status->load1())));
  out.push_back(std::move(load1));

  auto build = family(metrics::build_info, MetricType::Gauge);
  build.metric.push_back(gauge({label(metrics::label_version, FLOODGATE_VERSION)}, 1.0));
  out.push_back(std::move(build));
}

}  // namespace floodgate::beast
