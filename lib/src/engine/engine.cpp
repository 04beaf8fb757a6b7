// The engine's control plane: construction, rule loads, observers, hot keys and what the admin
// API and metrics read. The request path (checks, entry, exit) is entry_path.cpp.
#include <floodgate/engine/engine.hpp>

#include "engine/engine_impl.hpp"
#include "degrade/adaptive_breaker.hpp"
#include "degrade/circuit_breaker_impl.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace floodgate {

namespace detail {

namespace {

std::string rule_label(const std::string& name, std::string_view section, std::int32_t index) {
  return name.empty() ? std::string(section) + "[" + std::to_string(index) + "]" : name;
}

std::string param_label(const std::optional<param_selector>& param,
                        const std::optional<std::int32_t>& param_idx) {
  if (param_idx || !param) return "arg[" + std::to_string(param_idx.value_or(0)) + "]";
  switch (param->from) {
    case param_source::header:
      return "header:" + param->name;
    case param_source::query:
      return "query:" + param->name;
    case param_source::path:
      return "path:" + param->name;
    case param_source::client_ip:
      return "client_ip";
    case param_source::origin:
      break;
  }
  return "origin";
}

/// A tracker with the labels it is reported under.
struct tracked_parameter {
  std::string rule;
  std::string param;
  const param_detail::hot_key_tracker& tracker;
};

/// Calls `f(tracked_parameter)` for every tracker of one resource: paramFlow rules, then hotKeys.
template <class F>
void for_each_tracker(const resource_rules& r, F&& f) {
  if (r.param) {
    r.param->for_each_tracker(
        [&](const param_flow_rule& rule, std::int32_t index, const param_detail::hot_key_tracker& t) {
          f(tracked_parameter{rule_label(rule.name, "paramFlow", index),
                              param_label(rule.param, rule.param_idx), t});
        });
  }
  if (r.hot_keys) {
    r.hot_keys->for_each_tracker(
        [&](const hot_keys_rule& rule, std::int32_t index, const param_detail::hot_key_tracker& t) {
          f(tracked_parameter{rule_label(rule.name, "hotKeys", index),
                              param_label(rule.param, rule.param_idx), t});
        });
  }
}

engine_options checked(engine_options o) {
  const auto& w = o.windows;
  if (w.second_sample_count <= 0 || w.second_interval_ms <= 0 ||
      w.second_interval_ms % w.second_sample_count != 0 ||
      1000 % (w.second_interval_ms / w.second_sample_count) != 0) {
    throw std::invalid_argument(
        "floodgate::engine_options.windows: the bucket length (interval / sample count) must be a "
        "whole number of milliseconds dividing 1000");
  }
  if (o.occupy_timeout_ms < 0) {
    throw std::invalid_argument("floodgate::engine_options.occupy_timeout_ms: must be >= 0, not " +
                                std::to_string(o.occupy_timeout_ms));
  }
  // No borrowing further ahead than the window reaches: Sentinel ignores a longer occupyTimeout
  // (OccupyTimeoutProperty), and the default 500 ms with a shorter window must still work.
  o.occupy_timeout_ms = std::min<std::int64_t>(o.occupy_timeout_ms, w.second_interval_ms);
  const auto& l = o.limits;
  const std::pair<const char*, std::size_t> caps[] = {
      {"max_resources", l.max_resources},
      {"max_contexts", l.max_contexts},
      {"max_default_nodes", l.max_default_nodes},
      {"max_origin_nodes", l.max_origin_nodes},
      {"max_origins_per_resource", l.max_origins_per_resource}};
  for (const auto& [name, value] : caps) {
    if (value > node::registry_limits::max_cap) {
      throw std::invalid_argument(
          std::string("floodgate::engine_options.limits.") + name + ": must be at most " +
          std::to_string(node::registry_limits::max_cap) + ", not " + std::to_string(value));
    }
  }
  return o;
}
}  // namespace

engine_impl::engine_impl(engine_options options)
    : options_(checked(options)),
      bounded_(options_.time != nullptr ? options_.time : &default_clock()),
      ticker_(steady_millisecond_word(*bounded_.source())),
      clock_(ticker_ != nullptr ? bounded_.source() : &bounded_),
      registry_(options_.limits, options_.windows),
      snapshot_(std::make_unique<const rule_snapshot>()),
      system_status_(options_.system_status) {}

std::shared_ptr<const system_status_source> engine_impl::system_status() const {
  std::lock_guard lock(control_);
  return system_status_;
}

load_result engine_impl::load_rules(const rule_set& rules) {
  load_result result;
  validate(rules, result.errors);
  if (!result.ok()) {
    return result;
  }
  std::lock_guard lock(control_);
  if (!rules.system.empty() && system_status_ == nullptr) {
    system_status_ = process_system_status();
  }
  republish_locked(rules);
  return result;
}

void engine_impl::add_slot(std::shared_ptr<slot> s) {
  if (s == nullptr) throw std::invalid_argument("floodgate::engine::add_slot: the slot is null");
  std::lock_guard lock(control_);
  user_slots_.push_back(std::move(s));
  republish_locked(snapshot_.current()->rules);
}

void engine_impl::republish_locked(const rule_set& rules) {
  rate_limit_headers_.store(rules.rate_limit_headers.value_or(rate_limit_header_style::off),
                            std::memory_order_relaxed);
  const rule_snapshot* previous = snapshot_.current();
  snapshot_.publish(build_snapshot({rules, previous, user_slots_, observers_, system_status_,
                                    previous->version + 1, &registry_, clock_->now_ms(),
                                    options_.track_param_flow_values}));
}

engine_impl::~engine_impl() {
  {
    const std::lock_guard lock(ticker_mutex_);
    ticker_stop_ = true;
  }
  hot_wake_.notify_all();
  if (hot_ticker_.joinable()) hot_ticker_.join();
}

void engine_impl::add_hot_key_observer(hot_key_observer observer) {
  {
    const std::lock_guard lock(hot_mutex_);
    hot_observers_.push_back(std::move(observer));
  }
  const std::lock_guard start(ticker_mutex_);
  if (options_.hot_key_refresh_ms <= 0 || hot_ticker_.joinable() || ticker_stop_) return;
  hot_ticker_ = std::thread([this] {
    std::unique_lock lock(ticker_mutex_);
    while (!hot_wake_.wait_for(lock, std::chrono::milliseconds(options_.hot_key_refresh_ms),
                               [this] { return ticker_stop_; })) {
      lock.unlock();
      refresh_hot_keys();
      lock.lock();
    }
  });
}

void engine_impl::refresh_hot_keys(const std::function<void(const rule_snapshot&)>& f) {
  const std::lock_guard lock(hot_mutex_);
  snapshot_.reclaim();
  const auto pinned = snapshot_.read();
  const std::int64_t now = clock_->now_ms();
  std::vector<hot_key_event> events;
  std::vector<param_detail::hot_key_tracker::transition> changed;
  for (const auto& r : pinned->resources) {
    for_each_tracker(*r, [&](const tracked_parameter& p) {
      changed.clear();
      p.tracker.refresh(now, changed);
      for (auto& c : changed) {
        events.push_back({r->resource, p.rule, p.param, std::move(c.value), c.count, c.hot});
      }
    });
  }
  for (const hot_key_observer& observer : hot_observers_) {
    for (const hot_key_event& e : events) {
      try {
        observer(e);
      } catch (...) {
        // An observer that throws loses only its own notification.
      }
    }
  }
  if (f) f(*pinned);
}

}  // namespace detail

engine::engine(engine_options options)
    : impl_(std::make_unique<detail::engine_impl>(std::move(options))) {}
engine::~engine() = default;

resource_handle engine::resource(std::string_view name) noexcept {
  return resource_handle(impl_->registry().resource(name));
}

entrance_handle engine::entrance(std::string_view name) noexcept {
  return entrance_handle(impl_->registry().entrance(name));
}

load_result engine::load_rules(const rule_set& rules) { return impl_->load_rules(rules); }

rule_set engine::rules() const {
  impl_->snapshot().reclaim();
  return impl_->snapshot().read()->rules;
}

std::uint64_t engine::rules_version() const noexcept {
  return impl_->snapshot().read()->version;
}

void engine::add_slot(std::shared_ptr<slot> s) { impl_->add_slot(std::move(s)); }
void engine::add_breaker_observer(breaker_observer observer) {
  impl_->observers().add(std::move(observer));
}

void engine::for_each_breaker(
    const std::function<void(std::string_view, const circuit_breaker&, std::int32_t)>& f) const {
  impl_->snapshot().reclaim();
  const auto pinned = impl_->snapshot().read();
  for (const auto& r : pinned->resources) {
    if (r->degrade) {
      r->degrade->for_each(
          [&](const circuit_breaker& b, std::int32_t index) { f(r->resource, b, index); });
    }
  }
}

std::vector<hot_key> engine::hot_keys(std::string_view resource) const {
  std::vector<hot_key> out;
  impl_->refresh_hot_keys([&](const detail::rule_snapshot& snap) {
    const detail::resource_rules* r = snap.find(node::hash_name(resource), resource);
    if (r == nullptr) return;
    detail::for_each_tracker(*r, [&](const detail::tracked_parameter& p) {
      auto last = p.tracker.last();
      for (auto& c : last.top) {
        const bool hot = p.tracker.above_threshold(c.guaranteed());
        out.push_back({p.rule, p.param, std::move(c.text), c.count, hot});
      }
    });
  });
  std::stable_sort(out.begin(), out.end(),
                   [](const hot_key& a, const hot_key& b) { return a.count > b.count; });
  return out;
}

bool engine::is_hot(std::string_view resource, const param_value& value) const noexcept {
  const auto pinned = impl_->snapshot().read();
  const detail::resource_rules* r = pinned->find(node::hash_name(resource), resource);
  if (r == nullptr || value.empty()) return false;
  const std::int64_t now = impl_->time().now_ms();
  return (r->param && r->param->is_hot(value, now)) || (r->hot_keys && r->hot_keys->is_hot(value, now));
}

void engine::add_hot_key_observer(hot_key_observer observer) {
  impl_->add_hot_key_observer(std::move(observer));
}

void engine::refresh_hot_keys() const { impl_->refresh_hot_keys(); }

std::vector<hot_key_rule_stats> engine::hot_key_stats() const {
  std::vector<hot_key_rule_stats> out;
  impl_->refresh_hot_keys([&](const detail::rule_snapshot& snap) {
    for (const auto& r : snap.resources) {
      detail::for_each_tracker(*r, [&](const detail::tracked_parameter& p) {
        const auto v = p.tracker.last();
        out.push_back({r->resource, p.rule, v.hot_values, v.top_count, v.events,
                       p.tracker.carried_events(), p.tracker.serial()});
      });
    }
  });
  return out;
}

void engine::for_each_cluster_rule(
    const std::function<void(const flow_rule&, std::int32_t,
                             const std::shared_ptr<cluster_lease>&)>& f) const {
  impl_->snapshot().reclaim();
  const auto pinned = impl_->snapshot().read();
  for (const auto& r : pinned->resources) {
    if (r->flow) {
      r->flow->for_each_lease(f);
    }
  }
}

const clock& engine::time() const noexcept { return impl_->time(); }
std::string_view resource_handle::name() const noexcept {
  return node_ != nullptr ? std::string_view(node_->name()) : std::string_view{};
}

std::int64_t engine::in_flight() const noexcept {
  std::int64_t n = 0;
  impl_->registry().for_each_resource([&](const node::cluster_node& c) { n += c.concurrency(); });
  return n;
}

node::node_registry& engine::nodes() noexcept { return impl_->registry(); }
const node::node_registry& engine::nodes() const noexcept { return impl_->registry(); }
std::uint64_t engine::internal_errors() const noexcept { return impl_->internal_errors(); }

rate_limit_header_style engine::rate_limit_headers() const noexcept {
  return impl_->rate_limit_headers();
}
std::shared_ptr<const system_status_source> engine::system_status() const {
  return impl_->system_status();
}

}  // namespace floodgate
