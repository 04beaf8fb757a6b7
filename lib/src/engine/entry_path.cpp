// The request path: the checks of every slot, the entry and its exit (the statistic writes, the
// breakers' completions), and the public calls that lead to them. The engine's control plane
// (rules, observers, introspection) is engine.cpp.
#include <floodgate/engine/engine.hpp>

#include "engine/engine_impl.hpp"
#include "degrade/adaptive_breaker.hpp"
#include "degrade/circuit_breaker_impl.hpp"

#include <algorithm>
#include <chrono>
#include <memory>

namespace floodgate {

namespace detail {

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
                           options.precise_duration,
                           options.proceeds_after_wait};
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

bool engine_impl::count_start(entry& e) noexcept {
  if (e.counted_ || e.snapshot_ == nullptr) {
    return true;
  }
  e.counted_ = true;
  const std::int64_t now_ms = now(e.precise_).ms;
  if (e.out_.tokens.flow_after_wait != 0) [[unlikely]] {
    if (!check_after_wait(e, now_ms)) {
      return false;
    }
  }
  const stat::write_point at = point_at(*e.cluster_, now_ms, stat::this_thread_shard());
  count_pass(*e.cluster_, *e.node_, e.origin_node_, e.type_ == entry_type::inbound, e.rules_, at,
             e.acquire_, e.out_.tokens);
  return true;
}

bool engine_impl::check_after_wait(entry& e, std::int64_t now_ms) noexcept {
  const resource_rules* rules = e.rules_;
  entry_tokens& tokens = e.out_.tokens;
  if (rules == nullptr || !rules->flow || e.ctx_ == nullptr) {
    tokens.flow_after_wait = 0;
    return true;
  }
  const bool inbound = e.type_ == entry_type::inbound;
  const check_context cc{now_ms,
                         now_ms * 1'000'000,
                         *clock_,
                         e.cluster_->name(),
                         e.ctx_->entrance_ != nullptr
                             ? std::string_view(e.ctx_->entrance_->name())
                             : std::string_view{},
                         e.ctx_->origin_,
                         e.type_,
                         e.acquire_,
                         false,
                         {},
                         {},
                         *e.cluster_,
                         *e.node_,
                         e.origin_node_,
                         registry_,
                         options_.occupy_timeout_ms,
                         e.precise_,
                         true};
  const slot_verdict v = rules->flow->check_after_wait(cc, tokens);
  if (v.outcome != slot_verdict::kind::block) {
    return true;
  }
  // Blocked as Sentinel's FlowSlot blocks after a throttling sleep: what the other stages took
  // at the entry (a half-open probe, per-value counts) goes back, and it counts as a block.
  if (rules->degrade) rules->degrade->on_blocked_later(cc, tokens);
  if (rules->param) rules->param->on_blocked_later(cc, tokens);
  const stat::write_point at = point_at(*e.cluster_, now_ms, stat::this_thread_shard());
  const std::uint32_t n = e.acquire_;
  e.node_->add_block(at, n);
  if (e.origin_node_ != nullptr) e.origin_node_->add_block(at, n);
  if (inbound) registry_.inbound().add_block(at, n);
  e.cluster_->totals().blocked[static_cast<std::size_t>(block_reason::flow)].add(at);
  if (e.depth_ >= 0 && e.depth_ < e.ctx_->depth_) {
    e.ctx_->depth_ = e.depth_;
    e.ctx_->current_ = e.parent_;
  }
  snapshot_.release(e.pin_stripe_, e.pin_slot_);
  e.snapshot_ = nullptr;
  e.status_ = entry::status::blocked;
  std::construct_at(&e.out_.block, v.block);
  return false;
}

void engine_impl::exit(entry& e) noexcept {
  if (e.snapshot_ == nullptr) {
    return;  // passed unchecked
  }
  if (!e.counted_) [[unlikely]] {
    // Exited without proceeding: counted now, so the exit has a pass to close (or, blocked by a
    // rule left for the end of the wait, nothing to close).
    if (!count_start(e)) return;
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

}  // namespace floodgate
