// The flow slot: a resource's flow rules, checked in Sentinel's order, with their controllers.
#include "flow/flow_slot.hpp"
#include "flow/flow_rule_checker.hpp"
#include "node/cluster_node.hpp"
#include "node/node_registry.hpp"
#include "rules/blank.hpp"

#include "flow_controller.hpp"

#include <algorithm>
#include <optional>
#include <bit>

namespace floodgate {

namespace {

// entry_tokens keeps one bit per rule: rules past this index can neither hold an in-flight slot
// (they read the node instead) nor refund an admission.
constexpr std::size_t tracked_rules = 32;

struct compiled_rule {
  flow::detail::flow_controller* controller = nullptr;  // owned by `shared`
  /// Set for a QPS reject rule on the resource's own node (limitApp default, strategy direct,
  /// not a dry run): its passes may come from the admission window's lease, inline.
  flow::default_controller* leased = nullptr;
  /// Set, instead, for a clusterMode rule under the same conditions: its passes come from the
  /// fleet's lease, inline.
  cluster_lease* fleet = nullptr;
  std::int32_t index = 0;
  flow::limit_app_kind kind = flow::limit_app_kind::all;
  bool dry_run = false;
  /// A local QPS reject or warm-up rule of a resource that also queues requests: an entry that
  /// waits is checked by it when the wait ends (check_after_wait), as Sentinel checks it after
  /// the sleep.
  bool after_wait = false;
  flow_rule rule;  // limitApp normalised: empty → "default"
  std::shared_ptr<flow::detail::flow_controller> shared;
};

// A dry run never borrows from a coming window: it must not change what the node records.
slot_verdict check_dry_run(flow::detail::flow_controller& c, flow::flow_request req,
                           const flow::selected_node& node, bool tracked,
                           flow::flow_booking& booking) noexcept {
  req.prioritized = false;
  return c.check(req, node, tracked, booking);
}

}  // namespace

struct resource_flow_rules::impl {
  std::vector<compiled_rule> rules;  // specific limitApps first, then `default`
  std::vector<std::string> named;    // every rule's limitApp, for `other`

  // The full check, from rule `first` on (the rules before it passed on a lease).
  slot_verdict check_from(std::size_t first, const check_context& ctx,
                          entry_tokens& tokens) const noexcept;
  // Rule i's check and its bookkeeping: the final verdict (a block, or a borrowing wait), or
  // nothing to go on with the next rule (a wait is kept in `wait_ns`, the longest).
  std::optional<slot_verdict> check_rule(std::size_t i, const flow::flow_request& req,
                                         const check_context& ctx, entry_tokens& tokens,
                                         std::int64_t& wait_ns) const noexcept;

  // Gives back whatever this entry's check took (tokens.flow_*), and clears it.
  void give_back(std::uint32_t acquire, entry_tokens& tokens) const noexcept {
    for (auto bits = tokens.flow_admitted; bits != 0; bits &= bits - 1) {
      rules[static_cast<std::size_t>(std::countr_zero(bits))].controller->refund(
          tokens.flow_admit_window, acquire);
    }
    if (tokens.flow_queued != 0) {
      rules[static_cast<std::size_t>(std::countr_zero(tokens.flow_queued))].controller->unqueue(
          tokens.flow_queue_from_ns, tokens.flow_queue_to_ns);
      tokens.flow_queued = 0;
    }
    release(tokens);
    unreserve(acquire, tokens);
    tokens.flow_admitted = 0;
  }

  void unreserve(std::uint32_t acquire, entry_tokens& tokens) const noexcept {
    for (auto bits = tokens.flow_reserved; bits != 0; bits &= bits - 1) {
      rules[static_cast<std::size_t>(std::countr_zero(bits))].controller->unreserve(acquire);
    }
    tokens.flow_reserved = 0;
  }

  void release(entry_tokens& tokens) const noexcept {
    for (auto bits = tokens.flow_held; bits != 0; bits &= bits - 1) {
      rules[static_cast<std::size_t>(std::countr_zero(bits))].controller->release();
    }
    tokens.flow_held = 0;
  }
};

resource_flow_rules::resource_flow_rules(std::unique_ptr<impl> p)
    : impl_(std::move(p)), size_(impl_->rules.size()) {
  for (const compiled_rule& r : impl_->rules) {
    if ((r.leased == nullptr && r.fleet == nullptr) || leased_.size() == tracked_rules) {
      break;
    }
    leased_.push_back({r.leased, r.fleet});
  }
}
resource_flow_rules::~resource_flow_rules() = default;

std::unique_ptr<resource_flow_rules> resource_flow_rules::build(
    std::vector<indexed_rule<flow_rule>> rules, const resource_flow_rules* previous,
    const node::node_registry* nodes, std::int64_t now_ms) {
  auto p = std::make_unique<impl>();
  const node::cluster_node* resource = nodes != nullptr && !rules.empty()
                                           ? nodes->find_resource(rules.front().rule.resource)
                                           : nullptr;
  p->rules.reserve(rules.size());
  for (auto& ir : rules) {
    if (rules_detail::is_blank(ir.rule.limit_app)) {
      ir.rule.limit_app = "default";  // Sentinel: a blank limitApp means default
    }
    // Equal rules would count every pass twice; Sentinel's rule map drops them too.
    const bool duplicate = std::any_of(p->rules.begin(), p->rules.end(),
                                       [&](const compiled_rule& c) { return c.rule == ir.rule; });
    if (duplicate) {
      continue;
    }
    const auto kind = flow::classify_limit_app(ir.rule.limit_app);
    if (std::find(p->named.begin(), p->named.end(), ir.rule.limit_app) == p->named.end()) {
      p->named.push_back(ir.rule.limit_app);
    }
    const bool dry_run = ir.rule.dry_run;
    p->rules.push_back(
        {nullptr, nullptr, nullptr, ir.index, kind, dry_run, false, std::move(ir.rule), nullptr});
  }
  const bool queues = std::any_of(p->rules.begin(), p->rules.end(), [](const compiled_rule& c) {
    return !c.dry_run && (c.rule.behavior == control_behavior::throttling ||
                          c.rule.behavior == control_behavior::warm_up_throttling);
  });
  // Sentinel's FlowRuleComparator: any specific limitApp (`other` too) before `default`.
  std::stable_partition(p->rules.begin(), p->rules.end(),
                        [](const compiled_rule& c) { return c.kind != flow::limit_app_kind::all; });
  const std::vector<compiled_rule>* old = previous != nullptr ? &previous->impl_->rules : nullptr;
  // Old rules whose controller a new rule already took (equal) or took slots from (changed).
  std::vector<bool> taken(old != nullptr ? old->size() : 0, false);
  for (auto& c : p->rules) {
    if (old != nullptr) {
      const auto same = std::find_if(old->begin(), old->end(),
                                     [&](const compiled_rule& o) { return o.rule == c.rule; });
      if (same != old->end()) {
        c.shared = same->shared;  // unchanged rule: keep tokens, schedule, windows
        taken[static_cast<std::size_t>(same - old->begin())] = true;
      }
    }
  }
  for (auto& c : p->rules) {
    if (!c.shared) {
      c.shared = std::make_shared<flow::detail::flow_controller>(c.rule);
      // A changed concurrency rule counts the entries its predecessor (same callers, same
      // node) admitted: they hold its slots until they exit.
      if (old != nullptr && c.rule.grade == flow_grade::concurrency && !c.rule.cluster_mode) {
        for (std::size_t k = 0; k < old->size(); ++k) {
          const flow_rule& o = (*old)[k].rule;
          if (!taken[k] && o.grade == flow_grade::concurrency && !o.cluster_mode &&
              o.limit_app == c.rule.limit_app && o.strategy == c.rule.strategy &&
              o.ref_resource == c.rule.ref_resource) {
            c.shared->take_over_slots((*old)[k].shared);
            taken[k] = true;
            break;
          }
        }
      }
      // A new rule booking on a node of its own sees the traffic already under way there.
      if (resource != nullptr) {
        if (const auto* traffic = flow::find_booked_node(c.rule, c.kind, *nodes, *resource)) {
          c.shared->seed(*traffic, now_ms);
        }
      }
    }
    c.controller = c.shared.get();
    // Checked after a wait: never on a lease taken at the entry (the pass lands later).
    const bool reads_the_window =
        c.controller->qps_reject() != nullptr ||
        (c.rule.grade == flow_grade::qps && c.rule.behavior == control_behavior::warm_up &&
         !c.rule.cluster_mode);
    c.after_wait = queues && !c.dry_run && reads_the_window &&
                   static_cast<std::size_t>(&c - p->rules.data()) < tracked_rules;
    if (c.kind == flow::limit_app_kind::all && c.rule.strategy == flow_strategy::direct &&
        !c.dry_run) {
      c.leased = c.after_wait ? nullptr : c.controller->qps_reject();
      if (const auto* lease = c.controller->lease()) {
        c.fleet = lease->get();
      }
    }
  }
  return std::unique_ptr<resource_flow_rules>(new resource_flow_rules(std::move(p)));
}

slot_verdict resource_flow_rules::check_from(std::size_t first, const check_context& ctx,
                                             entry_tokens& tokens) const noexcept {
  return impl_->check_from(first, ctx, tokens);
}

slot_verdict resource_flow_rules::impl::check_from(std::size_t first, const check_context& ctx,
                                                   entry_tokens& tokens) const noexcept {
  const auto req = flow::flow_request::from(ctx);
  std::int64_t wait_ns = 0;
  std::uint32_t after_wait = 0;  // rules left for when a wait ends
  for (std::size_t i = first; i < rules.size(); ++i) {
    // A prioritized entry keeps Sentinel's borrowing: a QPS reject rule checks it now, and it
    // may book ahead (a warm-up rule never borrows).
    if (rules[i].after_wait && ctx.proceeds_after_wait &&
        !(ctx.prioritized && rules[i].controller->qps_reject() != nullptr)) {
      after_wait |= std::uint32_t{1} << i;
      continue;
    }
    if (const auto v = check_rule(i, req, ctx, tokens, wait_ns)) {
      return *v;
    }
  }
  if (wait_ns > 0) {
    tokens.flow_after_wait = after_wait;
    return slot_verdict::wait(wait_ns);
  }
  for (auto bits = after_wait; bits != 0; bits &= bits - 1) {  // no wait: they decide now
    if (const auto v = check_rule(static_cast<std::size_t>(std::countr_zero(bits)), req, ctx,
                                  tokens, wait_ns)) {
      return *v;
    }
  }
  return slot_verdict::pass();
}

std::optional<slot_verdict> resource_flow_rules::impl::check_rule(
    std::size_t i, const flow::flow_request& req, const check_context& ctx, entry_tokens& tokens,
    std::int64_t& wait_ns) const noexcept {
  const compiled_rule& r = rules[i];
  const auto node = flow::select_node(r.rule, r.kind, ctx, named);
  if (!node) {
    return std::nullopt;
  }
  const bool tracked = i < tracked_rules;
  flow::flow_booking booking;
  const slot_verdict v = r.dry_run ? check_dry_run(*r.controller, req, node, tracked, booking)
                                   : r.controller->check(req, node, tracked, booking);
  if (tracked) {
    const auto bit = std::uint32_t{1} << i;
    if (booking.admitted_window >= 0) {
      if (tokens.flow_admitted == 0) {
        tokens.flow_admit_window = booking.admitted_window;
      }
      // One window is kept per entry; a booking elsewhere is not refunded (errs towards fewer).
      if (tokens.flow_admit_window == booking.admitted_window) {
        tokens.flow_admitted |= bit;
      }
    }
    if (booking.held) {
      tokens.flow_held |= bit;
    }
    if (booking.reserved) {
      tokens.flow_reserved |= bit;
    }
    // A place in a throttling queue; with several, the first is given back on a block (the
    // others wait behind it anyway, or stay taken: errs towards fewer admissions).
    if (booking.queued && tokens.flow_queued == 0) {
      tokens.flow_queued = bit;
      tokens.flow_queue_from_ns = booking.queue_from_ns;
      tokens.flow_queue_to_ns = booking.queue_to_ns;
    }
  }
  if (booking.pass_booked) {
    // Prioritized borrowing ends the checks, as Sentinel's PriorityWaitException does: the
    // pass is booked in a future window, the request waits for it, nothing else is asked.
    tokens.pass_booked = true;
    return slot_verdict::wait(std::max(wait_ns, v.wait_ns));
  }
  if (v.outcome == slot_verdict::kind::pass) {
    return std::nullopt;
  }
  if (v.outcome == slot_verdict::kind::wait) {
    // Several rules queueing one request: it waits for the latest of them, not the sum
    // (Sentinel sleeps rule by rule, each from the time the previous sleep ended).
    wait_ns = std::max(wait_ns, r.dry_run ? 0 : v.wait_ns);
    return std::nullopt;
  }
  if (r.dry_run) {
    ctx.cluster.totals().dry_run_blocks.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  give_back(ctx.acquire, tokens);
  block_info b = v.block;
  b.reason = block_reason::flow;
  b.rule_index = r.index;
  return slot_verdict::blocked(b);
}

slot_verdict resource_flow_rules::check_after_wait(const check_context& ctx,
                                                   entry_tokens& tokens) const noexcept {
  auto req = flow::flow_request::from(ctx);
  req.prioritized = false;  // no borrowing now: the entry has waited already
  tokens.flow_queued = 0;   // its place in the queue was used: a block does not give it back
  const std::uint32_t after_wait = tokens.flow_after_wait;
  tokens.flow_after_wait = 0;
  std::int64_t wait_ns = 0;
  for (auto bits = after_wait; bits != 0; bits &= bits - 1) {
    if (const auto v = impl_->check_rule(static_cast<std::size_t>(std::countr_zero(bits)), req,
                                         ctx, tokens, wait_ns)) {
      return *v;
    }
  }
  return slot_verdict::pass();
}

void resource_flow_rules::on_recorded(std::uint32_t acquire, entry_tokens& tokens) const noexcept {
  impl_->unreserve(acquire, tokens);
}

void resource_flow_rules::on_blocked_later(const check_context& ctx,
                                           entry_tokens& tokens) const noexcept {
  impl_->give_back(ctx.acquire, tokens);
}

namespace {

// The quota of one QPS rule on `node` at `now_ms`: Sentinel's reading of the window (passes per
// second, truncated), and the time until the newest bucket holding passes leaves the window.
flow_quota quota_on(const stat::statistic_node& node, double count, std::int64_t now_ms) noexcept {
  const auto& cfg = node.config();
  const std::int64_t bucket_ms = node.bucket_ms();
  const std::uint64_t passes = node.window_sum(stat::metric_event::pass, now_ms);
  const std::uint64_t per_second =
      cfg.second_interval_ms == 1000
          ? passes
          : passes * 1000 / static_cast<std::uint64_t>(cfg.second_interval_ms);
  flow_quota q;
  q.limit = static_cast<std::uint64_t>(count);  // validated: 0 <= count <= max_rule_count
  q.remaining = q.limit > per_second ? q.limit - per_second : 0;
  const std::int64_t w = node.bucket_divider().divide(std::max<std::int64_t>(now_ms, 0));
  for (std::int64_t u = w; u > w - cfg.second_sample_count && u >= 0; --u) {
    if (node.window_pass_at(u * bucket_ms, now_ms) != 0) {
      q.reset_ms = (u + cfg.second_sample_count) * bucket_ms - now_ms;
      break;
    }
  }
  return q;
}

}  // namespace

flow_quota resource_flow_rules::strictest_quota(std::int64_t now_ms, std::string_view origin,
                                                const stat::statistic_node& cluster,
                                                const stat::statistic_node* origin_node,
                                                std::int32_t blocking_rule) const noexcept {
  flow_quota best;
  for (const compiled_rule& r : impl_->rules) {
    const flow_rule& rule = r.rule;
    if (rule.grade != flow_grade::qps || rule.behavior != control_behavior::reject ||
        rule.strategy != flow_strategy::direct || r.dry_run || rule.cluster_mode) {
      continue;  // a clusterMode rule's quota is the fleet's, not this node's
    }
    const stat::statistic_node* node = nullptr;
    switch (r.kind) {
      case flow::limit_app_kind::all:
        node = &cluster;
        break;
      case flow::limit_app_kind::origin:
        node = origin == rule.limit_app ? origin_node : nullptr;
        break;
      case flow::limit_app_kind::other:
        node = flow::is_other_origin(origin, impl_->named) ? origin_node : nullptr;
        break;
    }
    if (node == nullptr) {
      continue;
    }
    flow_quota q = quota_on(*node, rule.count, now_ms);
    q.rule_index = r.index;
    if (r.index == blocking_rule) {
      q.remaining = 0;
    }
    if (best.rule_index < 0 || q.remaining < best.remaining ||
        (q.remaining == best.remaining && q.limit < best.limit)) {
      best = q;
    }
  }
  return best;
}

void resource_flow_rules::for_each_lease(
    const std::function<void(const flow_rule&, std::int32_t,
                             const std::shared_ptr<cluster_lease>&)>& f) const {
  for (const compiled_rule& r : impl_->rules) {
    if (const auto* lease = r.controller->lease()) {
      f(r.rule, r.index, *lease);
    }
  }
}

void resource_flow_rules::on_exit(const exit_context&, entry_tokens& tokens) const noexcept {
  impl_->release(tokens);
}

}  // namespace floodgate
