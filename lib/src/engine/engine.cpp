#include <floodgate/engine/engine.hpp>

#include "engine/engine_impl.hpp"
#include "degrade/adaptive_breaker.hpp"
#include "degrade/circuit_breaker_impl.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <stdexcept>

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

const engine_options& checked(const engine_options& o) {
  const auto& w = o.windows;
  if (w.second_sample_count <= 0 || w.second_interval_ms <= 0 ||
      w.second_interval_ms % w.second_sample_count != 0 ||
      1000 % (w.second_interval_ms / w.second_sample_count) != 0) {
    throw std::invalid_argument(
        "floodgate::engine_options.windows: the bucket length (interval / sample count) must be a "
        "whole number of milliseconds dividing 1000");
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
  std::lock_guard lock(control_);
  user_slots_.push_back(std::move(s));
  republish_locked(snapshot_.current()->rules);
}

void engine_impl::republish_locked(const rule_set& rules) {
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

namespace {

bool blocked(const slot_verdict& v) noexcept { return v.outcome == slot_verdict::kind::block; }

// Every breaker CLOSED: the degrade check would pass without side effects, so it is skipped.
// An adaptive breaker is never closed: it decides on every request.
bool all_closed(const resource_breakers& breakers) noexcept {
  if (!breakers.adaptive_list().empty()) {
    return false;
  }
  for (const detail::circuit_breaker_impl* b : breakers.list()) {
    if (!b->closed()) {
      return false;
    }
  }
  return true;
}

}  // namespace

slot_verdict engine_impl::run_checks(const rule_snapshot& snap, const resource_rules* rules,
                                     const check_context& cc, entry_tokens& tokens) noexcept {
  if (!snap.user_slots.empty()) {
    return run_checks_with_user_slots(snap, rules, cc, tokens);
  }
  // The built-in stages in order, without the interleaving of user slots. Each verdict is
  // built in place: a pass writes two words, and nothing is copied unless it blocks.
  std::int64_t wait_ns = 0;
  const auto stops = [&](const slot_verdict& v, stage st) noexcept {
    if (blocked(v)) [[unlikely]] {
      unwind(snap, rules, st, cc, tokens);
      return true;
    }
    wait_ns = std::max(wait_ns, v.wait_ns);
    return false;
  };
  if (rules != nullptr && rules->authority) {
    const slot_verdict v = rules->authority->check(cc);
    if (stops(v, stage::authority)) return v;
  }
  if (snap.system && cc.type == entry_type::inbound) {
    const slot_verdict v = snap.system->check(cc);
    if (stops(v, stage::system)) return v;
  }
  if (rules != nullptr) {
    if (rules->hot_keys) rules->hot_keys->record(cc);
    if (rules->param) {
      const slot_verdict v = rules->param->check(cc, tokens);
      if (stops(v, stage::param_flow)) return v;
    }
    if (rules->flow) {
      const std::size_t first = rules->flow->spend_leases(cc, tokens);
      if (first < rules->flow->size()) {
        const slot_verdict v = rules->flow->check_from(first, cc, tokens);
        if (stops(v, stage::flow)) return v;
        if (tokens.pass_booked) return slot_verdict::wait(wait_ns);  // borrowing ends the checks
      }
    }
    if (rules->degrade && !all_closed(*rules->degrade)) {
      const slot_verdict v = rules->degrade->check(cc, tokens);
      if (stops(v, stage::degrade)) return v;
    }
  }
  return wait_ns > 0 ? slot_verdict::wait(wait_ns) : slot_verdict::pass();
}

slot_verdict engine_impl::run_checks_with_user_slots(const rule_snapshot& snap,
                                                     const resource_rules* rules,
                                                     const check_context& cc,
                                                     entry_tokens& tokens) noexcept {
  std::int64_t wait_ns = 0;
  std::size_t next_user = 0;
  for (std::size_t k = 0; k < stage_count; ++k) {
    const auto st = static_cast<stage>(k);
    // User slots placed before this stage.
    for (; next_user < snap.first_slot[k]; ++next_user) {
      slot_verdict v = snap.user_slots[next_user]->on_entry(cc);
      if (blocked(v)) {
        v.block.reason = block_reason::custom;
        unwind(snap, rules, st, cc, tokens);
        return v;
      }
      wait_ns = std::max(wait_ns, v.wait_ns);
    }
    slot_verdict v;
    switch (st) {
      case stage::authority:
        if (rules != nullptr && rules->authority) v = rules->authority->check(cc);
        break;
      case stage::system:
        if (snap.system && cc.type == entry_type::inbound) v = snap.system->check(cc);
        break;
      case stage::param_flow:
        if (rules != nullptr && rules->hot_keys) rules->hot_keys->record(cc);
        if (rules != nullptr && rules->param) v = rules->param->check(cc, tokens);
        break;
      case stage::flow:
        if (rules != nullptr && rules->flow) v = rules->flow->check(cc, tokens);
        break;
      case stage::degrade:
        if (rules != nullptr && rules->degrade) v = rules->degrade->check(cc, tokens);
        break;
      case stage::end:
        break;
    }
    if (blocked(v)) {
      unwind(snap, rules, st, cc, tokens);
      return v;
    }
    wait_ns = std::max(wait_ns, v.wait_ns);
    if (st == stage::flow && tokens.pass_booked) break;  // borrowing ends the checks
  }
  return wait_ns > 0 ? slot_verdict::wait(wait_ns) : slot_verdict::pass();
}

void engine_impl::unwind(const rule_snapshot&, const resource_rules* rules, stage reached,
                         const check_context& cc, entry_tokens& tokens) noexcept {
  if (rules == nullptr) {
    return;
  }
  // Give back what the stages before the blocking one took (Sentinel's whenTerminate for
  // half-open probes, plus our admission refunds).
  const auto at = static_cast<std::size_t>(reached);
  if (at > static_cast<std::size_t>(stage::degrade) && rules->degrade) {
    rules->degrade->on_blocked_later(cc, tokens);
  }
  if (at > static_cast<std::size_t>(stage::flow) && rules->flow) {
    rules->flow->on_blocked_later(cc, tokens);
  }
  if (at > static_cast<std::size_t>(stage::param_flow) && rules->param) {
    rules->param->on_blocked_later(cc, tokens);
  }
}

entry engine_impl::enter(context& ctx, node::cluster_node* cluster,
                         const entry_options& options) noexcept {
  if (ctx.entrance_ == nullptr || cluster == nullptr) {
    return entry(this, options.acquire, options.type);  // null context or past the resource cap
  }
  node::child_list& parent =
      ctx.current_ != nullptr ? ctx.current_->children() : ctx.entrance_->children();
  node::default_node* node = registry_.default_node_for(*ctx.entrance_, *cluster, parent);
  if (node == nullptr) {
    return entry(this, options.acquire, options.type);  // no memory even for the overflow node
  }
  const stat::writer_shard ws = stat::this_thread_shard();
  node::origin_node* origin = registry_.origin(*cluster, ctx.origin_, ctx.origin_hash_, ws.index);

  // Plain variables, not a structured binding: the check lambda below captures them, which
  // Clang 14 (the fuzz build) rejects for bindings.
  const instant at_enter = now(options.precise_duration);
  const std::int64_t now_ms = at_enter.ms;
  const std::int64_t now_ns = at_enter.ns;
  auto pinned = snapshot_.read();
  const rule_snapshot& snap = *pinned;
  const resource_rules* rules = snap.rules_for(*cluster);
  const bool inbound = options.type == entry_type::inbound;

  entry_tokens tokens;
  const bool checked = rules != nullptr || !snap.user_slots.empty() || (snap.system && inbound);
  const slot_verdict v = !checked ? slot_verdict::pass() : [&]() noexcept {
    const check_context cc{now_ms,
                           now_ms * 1'000'000,
                           *clock_,
                           cluster->name(),
                           ctx.entrance_->name(),
                           ctx.origin_,
                           options.type,
                           options.acquire,
                           options.prioritized,
                           options.args,
                           options.params,
                           *cluster,
                           *node,
                           origin,
                           registry_,
                           options_.occupy_timeout_ms,
                           options.precise_duration};
    return run_checks(snap, rules, cc, tokens);
  }();

  // One write point serves every node: they share the engine's window shape.
  const stat::write_point at = point_at(*cluster, now_ms, ws);
  const std::uint32_t n = options.acquire;
  if (blocked(v)) [[unlikely]] {
    node->add_block(at, n);
    if (origin != nullptr) origin->add_block(at, n);
    if (inbound) registry_.inbound().add_block(at, n);
    cluster->totals().blocked[static_cast<std::size_t>(v.block.reason)].add(at);
    return entry(this, n, options.type, cluster, origin, v.block);
  }

  // StatisticSlot: count the pass after every check succeeded — for an entry that must wait
  // first, when the wait is over (count_start), as Sentinel counts after FlowSlot's sleep.
  const bool counted = v.wait_ns <= 0 || !options.proceeds_after_wait;
  if (counted) [[likely]] {
    count_pass(*cluster, *node, origin, inbound, rules, at, n, tokens);
  }

  const auto pin = pinned.keep();  // released by exit()
  const entry::pass_state state{&ctx,         cluster,    node,       origin,
                                ctx.current_, rules,      &snap,      now_ms,
                                now_ns,       v.wait_ns,  ctx.depth_, pin.stripe,
                                pin.slot,     options.precise_duration, counted};
  if (ctx.depth_ < context::max_depth) {
    ctx.current_ = node;
  }
  ++ctx.depth_;
  return entry(this, n, options.type, state, tokens);
}

void engine_impl::count_pass(node::cluster_node& cluster, node::default_node& node,
                             node::origin_node* origin, bool inbound, const resource_rules* rules,
                             const stat::write_point& at, std::uint32_t n,
                             entry_tokens& tokens) noexcept {
  if (!tokens.pass_booked) [[likely]] {
    node.record_pass(at, n);
    if (origin != nullptr) origin->record_pass(at, n);
    if (inbound) registry_.inbound().record_pass(at, n);
  } else {
    // A pass booked in a coming window counts there already; only the request in flight here.
    node.increase_concurrency(at);
    if (origin != nullptr) origin->increase_concurrency(at);
    if (inbound) registry_.inbound().increase_concurrency(at);
  }
  cluster.totals().count_pass(at);
  if (tokens.flow_reserved != 0) [[unlikely]] {
    rules->flow->on_recorded(n, tokens);  // the rules that read these nodes now see the pass
  }
}

void engine_impl::count_start(entry& e) noexcept {
  if (e.counted_ || e.snapshot_ == nullptr) {
    return;
  }
  e.counted_ = true;
  const std::int64_t now_ms = now(e.precise_).ms;
  const stat::write_point at = point_at(*e.cluster_, now_ms, stat::this_thread_shard());
  count_pass(*e.cluster_, *e.node_, e.origin_node_, e.type_ == entry_type::inbound, e.rules_, at,
             e.acquire_, e.out_.tokens);
}

void engine_impl::exit(entry& e) noexcept {
  if (e.snapshot_ == nullptr) {
    return;  // passed unchecked
  }
  if (!e.counted_) [[unlikely]] {
    count_start(e);  // exited without proceeding: counted now, so the exit has a pass to close
  }
  const instant at_exit = now(e.precise_);
  const std::int64_t now_ms = at_exit.ms;
  const std::int64_t now_ns = at_exit.ns;
  const std::int64_t create_ms = e.create_ms_;
  const std::int64_t rt_ms = now_ms - create_ms;
  const bool inbound = e.type_ == entry_type::inbound;
  const std::uint32_t n = e.acquire_;

  const stat::write_point at = point_at(*e.cluster_, now_ms, stat::this_thread_shard());
  e.node_->record_completion(at, rt_ms, n, e.error_);
  if (e.origin_node_ != nullptr) e.origin_node_->record_completion(at, rt_ms, n, e.error_);
  if (inbound) registry_.inbound().record_completion(at, rt_ms, n, e.error_);
  auto& totals = e.cluster_->totals();
  totals.observe_duration(now_ns - e.create_ns_, at);
  if (e.error_) totals.errors.add(at);

  const resource_rules* rules = e.rules_;
  const auto& user_slots = e.snapshot_->user_slots;
  entry_tokens& tokens = e.out_.tokens;
  // Breakers record the exit as the rules in force now see it (Sentinel's DegradeSlot reads the
  // rule manager at exit): after a reload, the new snapshot's breakers, not the entry's.
  const bool reloaded = snapshot_.current() != e.snapshot_;
  if (reloaded) [[unlikely]] {
    const auto current = snapshot_.read();
    const resource_rules* now_rules = current->rules_for(*e.cluster_);
    if (now_rules != nullptr && now_rules->degrade) {
      for (detail::circuit_breaker_impl* b : now_rules->degrade->list()) {
        b->on_request_complete(now_ms, rt_ms, e.error_);
      }
      for (detail::adaptive_breaker* b : now_rules->degrade->adaptive_list()) {
        b->on_request_complete(now_ms, e.error_);
      }
    }
  }
  const bool report_to_breakers = !reloaded && rules != nullptr && rules->degrade;
  // Flow and param exits only release what the entry holds (to the rules that gave it).
  const bool held = rules != nullptr && (tokens.param_held_count != 0 || tokens.flow_held != 0);
  if (held || !user_slots.empty()) [[unlikely]] {
    const exit_context xc{now_ms, now_ms * 1'000'000, create_ms, rt_ms,         e.error_,
                          n,      *e.cluster_,        *e.node_,  e.origin_node_};
    if (rules != nullptr && rules->param && tokens.param_held_count != 0) {
      rules->param->on_exit(xc, tokens);
    }
    if (rules != nullptr && rules->flow && tokens.flow_held != 0) {
      rules->flow->on_exit(xc, tokens);
    }
    if (report_to_breakers) {
      rules->degrade->on_exit(xc, tokens);
    }
    for (const auto& s : user_slots) {
      s->on_exit(xc);
    }
  } else if (report_to_breakers) {
    for (detail::circuit_breaker_impl* b : rules->degrade->list()) {
      b->on_request_complete(now_ms, rt_ms, e.error_);  // resource_breakers::on_exit, inline
    }
    for (detail::adaptive_breaker* b : rules->degrade->adaptive_list()) {
      b->on_request_complete(now_ms, e.error_);
    }
  }

  // Pop this entry (and any left open above it, as Sentinel does on a pairing violation).
  if (e.ctx_ != nullptr && e.depth_ >= 0 && e.depth_ < e.ctx_->depth_) {
    e.ctx_->depth_ = e.depth_;
    e.ctx_->current_ = e.parent_;
  }
  snapshot_.release(e.pin_stripe_, e.pin_slot_);
  e.snapshot_ = nullptr;
}

}  // namespace detail

engine::engine(engine_options options)
    : impl_(std::make_unique<detail::engine_impl>(std::move(options))) {}
engine::~engine() = default;

entry engine::enter(context& ctx, std::string_view resource,
                    const entry_options& options) noexcept {
  // A null context never creates resources.
  return impl_->enter(ctx, ctx.is_null() ? nullptr : impl_->registry().resource(resource), options);
}

entry engine::enter(context& ctx, resource_handle resource, const entry_options& options) noexcept {
  return impl_->enter(ctx, resource.node_, options);
}

quota_status engine::quota(const context& ctx, const entry& e) const noexcept {
  if (e.cluster_ == nullptr || !(e.passed() || e.blocked())) {
    return {};
  }
  const auto pinned = impl_->snapshot().read();
  const detail::resource_rules* rules = pinned->rules_for(*e.cluster_);
  if (rules == nullptr || !rules->flow) {
    return {};
  }
  const std::int32_t blocking_rule =
      e.blocked() && e.block().reason == block_reason::flow ? e.block().rule_index : -1;
  const flow_quota q = rules->flow->strictest_quota(impl_->time().now_ms(), ctx.origin(),
                                                    *e.cluster_, e.origin_node_, blocking_rule);
  if (q.rule_index < 0) {
    return {};
  }
  return {q.limit, q.remaining, std::chrono::milliseconds(q.reset_ms), q.rule_index};
}

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
        out.push_back({r->resource, p.rule, v.hot_values, v.top_count, v.events, &p.tracker});
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
std::shared_ptr<const system_status_source> engine::system_status() const {
  return impl_->system_status();
}

}  // namespace floodgate
