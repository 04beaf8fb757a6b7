#include <floodgate/beast/dashboard_snapshot.hpp>
#include <floodgate/config/rule_file_watcher.hpp>

#include "admin_json.hpp"
#include "node/node_registry.hpp"
#include "utf8.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <string_view>
#include <utility>
#include <vector>

namespace floodgate::beast {

namespace json = boost::json;

namespace {

/// The transitions a breaker can make (Sentinel's state machine).
constexpr std::array<std::pair<breaker_state, breaker_state>, 4> transitions = {{
    {breaker_state::closed, breaker_state::open},
    {breaker_state::open, breaker_state::half_open},
    {breaker_state::half_open, breaker_state::open},
    {breaker_state::half_open, breaker_state::closed},
}};

struct resource_row {
  const node::cluster_node* node;
  /// pass, block, success (completions), error: since the previous snapshot (the first
  /// snapshot: the 1-second window's rates).
  std::array<double, 4> counts;
};

std::uint64_t load(const auto& counter) { return counter.load(std::memory_order_acquire); }

}  // namespace

dashboard_snapshot::resource_counts dashboard_snapshot::counts_of(const node::cluster_node& n) {
  const auto& t = n.totals();
  resource_counts c{};
  c[0] = load(t.passed);
  for (std::size_t r = 0; r < block_reason_count; ++r) c[1] += load(t.blocked[r]);
  // Completions before errors, so that an error being counted is never a completion short.
  for (std::size_t i = 0; i < node::totals_layout::histogram_size; ++i) c[2] += load(t.duration[i]);
  c[3] = load(t.errors);
  return c;
}

std::string dashboard_snapshot::operator()() {
  const std::int64_t now = engine_->time().now_ms();
  const node::node_registry& nodes = engine_->nodes();
  json::object out;
  out["t"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();

  std::vector<resource_row> rows;
  std::array<std::uint64_t, block_reason_count> blocked{};
  nodes.for_each_resource([&](const node::cluster_node& n) {
    for (std::size_t r = 0; r < block_reason_count; ++r) {
      blocked[r] += load(n.totals().blocked[r]);
    }
    // Counts from the resource's monotonic totals, so that the snapshots of a stream add up to
    // exactly what happened, however requests fall against the sliding window's buckets. A
    // resource first seen now was made since the previous snapshot: all its counts are new.
    const resource_counts total = counts_of(n);
    const auto last = last_counts_.try_emplace(&n, resource_counts{}).first;
    resource_row row{&n, {}};
    if (first_) {
      row.counts = {n.pass_qps(now), n.block_qps(now), n.success_qps(now), n.exception_qps(now)};
    } else {
      for (std::size_t i = 0; i < total.size(); ++i) {
        const std::uint64_t before = last->second[i];
        row.counts[i] = static_cast<double>(total[i] >= before ? total[i] - before : 0);
      }
    }
    last->second = total;
    if (n.total_pass(now) + n.block_request(now) > 0 || n.concurrency() > 0 ||
        row.counts[0] + row.counts[1] + row.counts[2] > 0) {
      rows.push_back(row);
    }
  });
  const std::size_t shown = std::min(rows.size(), max_resources);
  std::partial_sort(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(shown), rows.end(),
                    [](const resource_row& a, const resource_row& b) {
                      const double ta = a.counts[0] + a.counts[1];
                      const double tb = b.counts[0] + b.counts[1];
                      return ta != tb ? ta > tb : a.node->name() < b.node->name();
                    });
  json::array resources;
  resources.reserve(shown);
  for (std::size_t i = 0; i < shown; ++i) {
    const node::cluster_node& n = *rows[i].node;
    const auto& c = rows[i].counts;
    resources.push_back(json::array{json::value(n.name()), json_number(c[0]), json_number(c[1]),
                                    json_number(c[2]), json_number(c[3]),
                                    json_number(n.avg_rt(now)), json::value(n.concurrency())});
  }
  out["resources"] = std::move(resources);
  out["resourceCount"] = nodes.resource_count();
  out["overflow"] = nodes.overflow().resources.load(std::memory_order_acquire);

  json::object by_reason;
  for (std::size_t r = 0; r < block_reason_count; ++r) {
    const std::uint64_t delta =
        first_ || blocked[r] < last_blocked_[r] ? 0 : blocked[r] - last_blocked_[r];
    by_reason[to_string(static_cast<block_reason>(r))] = delta;
  }
  last_blocked_ = blocked;
  first_ = false;
  out["blocked"] = std::move(by_reason);

  json::array breakers;
  engine_->for_each_breaker(
      [&](std::string_view resource, const circuit_breaker& b, std::int32_t index) {
        const breaker_state state = b.state();
        json::object o = breaker_json(resource, b, index, state, now);
        o["nextProbeInMs"] = state == breaker_state::open
                                 ? json::value(std::max<std::int64_t>(b.next_retry_ms() - now, 0))
                                 : json::value(nullptr);
        json::array changes;
        for (const auto& [from, to] : transitions) {
          if (const std::uint64_t count = b.transitions(from, to)) {
            changes.push_back(json::object{{"from", to_string(from)},
                                           {"to", to_string(to)},
                                           {"count", count}});
          }
        }
        o["transitions"] = std::move(changes);
        breakers.push_back(std::move(o));
      });
  out["breakers"] = std::move(breakers);

  out["reload"] = watcher_ != nullptr ? json::value(reload_json(watcher_->status()))
                                      : json::value(nullptr);
  const std::uint64_t version = engine_->rules_version();
  out["rulesVersion"] = version;
  if (version != rules_version_) {
    rules_version_ = version;
    has_system_rules_ = !engine_->rules().system.empty();
  }
  std::shared_ptr<const system_status_source> status = engine_->system_status();
  if (has_system_rules_ && status) {
    out["system"] = json::object{{"cpuUsage", json_number(status->cpu_usage())},
                                 {"load1", json_number(status->load1())}};
  } else {
    out["system"] = nullptr;
  }
  return detail::valid_utf8(json_text(out));  // names may hold any bytes
}

}  // namespace floodgate::beast
