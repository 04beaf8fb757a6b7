// The flow slot: a resource's compiled flow rules and their controllers.
#pragma once

#include <floodgate/chain/cluster_lease.hpp>
#include <floodgate/chain/slot.hpp>
#include "flow/cluster_controller.hpp"
#include "flow/default_controller.hpp"
#include <floodgate/rules/flow_rule.hpp>
#include "rules/indexed_rule.hpp"

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

namespace floodgate {

namespace node {
class node_registry;
}

/// What @ref resource_flow_rules::strictest_quota finds (engine::quota's source).
struct flow_quota {
  std::uint64_t limit = 0;
  std::uint64_t remaining = 0;
  std::int64_t reset_ms = 0;
  std::int32_t rule_index = -1;  ///< -1: no rule applies
};

/** The flow rules of one resource, compiled with their traffic-shaping controllers.

    Immutable once built, except for the controllers' own atomic state. Built by the control
    plane; `previous` is the same resource's object in the snapshot being replaced, whose
    controller state carries over for rules that did not change.
*/
class resource_flow_rules {
 public:
  /** `nodes` (may be null) is the statistics tree: a new rule that books its admissions on a
      node of its own (the resource's, a named origin's, its context's for chain) starts from
      the passes that node counted in the current interval, as of `now_ms`. */
  static std::unique_ptr<resource_flow_rules> build(std::vector<indexed_rule<flow_rule>> rules,
                                                    const resource_flow_rules* previous,
                                                    const node::node_registry* nodes = nullptr,
                                                    std::int64_t now_ms = -1);
  ~resource_flow_rules();

  /// Checks every rule (specific limitApp first); blocks on the first that fails.
  slot_verdict check(const check_context& ctx, entry_tokens& tokens) const noexcept {
    const std::size_t first = spend_leases(ctx, tokens);
    return first == size_ ? slot_verdict::pass() : check_from(first, ctx, tokens);
  }

  /** The usual case of check(), inline, for the leading rules that apply to every entry
      (limitApp default, strategy direct, no dry run): a local QPS reject rule takes a pass from
      its admission window's lease to this thread (admission_window::spend_lease), with check()'s
      bookkeeping; a clusterMode rule in global mode takes one from the fleet's lease
      (cluster_controller's global case). Returns how many leading rules passed that way;
      check_from() decides the rest. */
  std::size_t spend_leases(const check_context& ctx, entry_tokens& tokens) const noexcept {
    if (leased_.empty() || ctx.now_ms < 0) {
      return 0;
    }
    const std::int64_t w = ctx.cluster.bucket_divider().divide(ctx.now_ms);
    const stat::writer_shard ws = stat::this_thread_shard();
    std::int64_t lease_ms = -1;  // read for the first clusterMode rule
    std::size_t i = 0;
    for (; i < leased_.size(); ++i) {
      if (cluster_lease* fleet = leased_[i].fleet) {
        if (lease_ms < 0) {
          lease_ms = flow::lease_time_ms(ctx.now_ms, ctx.now_is_fresh, &ctx.time);
        }
        if (fleet->mode() != cluster_mode::global || !fleet->try_take(ctx.acquire, lease_ms)) {
          break;
        }
        continue;
      }
      if (!leased_[i].local->spend_lease(w, ctx.acquire, ws)) {
        break;
      }
      if (tokens.flow_admitted == 0) {
        tokens.flow_admit_window = w;
      }
      if (tokens.flow_admit_window == w) {
        tokens.flow_admitted |= std::uint32_t{1} << i;
      }
    }
    return i;
  }
  /// check() from rule `first` on (the rules before it passed in spend_leases()).
  slot_verdict check_from(std::size_t first, const check_context& ctx,
                          entry_tokens& tokens) const noexcept;
  /// Number of rules.
  std::size_t size() const noexcept { return size_; }
  /// The entry passed and its pass is recorded on every node: end its reservations
  /// (entry_tokens::flow_reserved).
  void on_recorded(std::uint32_t acquire, entry_tokens& tokens) const noexcept;
  /** The entry's wait is over: the rules check() left for then (entry_tokens::flow_after_wait,
      the local QPS reject rules of a resource that queues requests) decide now, on the
      windows the pass will land in, as Sentinel's FlowSlot checks the rules after a throttling
      sleep. A block gives back what the entry holds, but not its used place in the queue. */
  slot_verdict check_after_wait(const check_context& ctx, entry_tokens& tokens) const noexcept;
  /// A later slot blocked the entry: give back what check() took.
  void on_blocked_later(const check_context& ctx, entry_tokens& tokens) const noexcept;
  void on_exit(const exit_context& ctx, entry_tokens& tokens) const noexcept;
  /// Calls `f(rule, rule_index, lease)` for each clusterMode rule (control plane).
  void for_each_lease(const std::function<void(const flow_rule&, std::int32_t,
                                               const std::shared_ptr<cluster_lease>&)>& f) const;

  /** Of the QPS reject rules with the direct strategy that apply to an entry of `origin` (whose
      origin node is `origin_node`, may be null), the one with the fewest passes left in the
      window at `now_ms` (see quota_status). `blocking_rule` (the flow index of the rule that
      blocked the entry, or -1) has none left. No allocation, no side effect. */
  flow_quota strictest_quota(std::int64_t now_ms, std::string_view origin,
                             const stat::statistic_node& cluster,
                             const stat::statistic_node* origin_node,
                             std::int32_t blocking_rule) const noexcept;

  struct impl;

 private:
  explicit resource_flow_rules(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
  std::size_t size_ = 0;
  /// A leading rule spend_leases() serves: one of the two is set.
  struct inline_rule {
    flow::default_controller* local = nullptr;
    cluster_lease* fleet = nullptr;
  };
  std::vector<inline_rule> leased_;
};

}  // namespace floodgate
