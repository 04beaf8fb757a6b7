// The flow slot: a resource's compiled flow rules and their controllers.
#pragma once

#include <floodgate/chain/cluster_lease.hpp>
#include <floodgate/chain/slot.hpp>
#include "flow/default_controller.hpp"
#include <floodgate/rules/flow_rule.hpp>
#include "rules/indexed_rule.hpp"

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

namespace floodgate {

/** The flow rules of one resource, compiled with their traffic-shaping controllers.

    Immutable once built, except for the controllers' own atomic state. Built by the control
    plane; `previous` is the same resource's object in the snapshot being replaced, whose
    controller state carries over for rules that did not change.
*/
class resource_flow_rules {
 public:
  /** `traffic` (may be null) is the resource's node: a new rule that books admissions on it
      starts from the passes it counted in the current interval, as of `now_ms`. */
  static std::unique_ptr<resource_flow_rules> build(std::vector<indexed_rule<flow_rule>> rules,
                                                    const resource_flow_rules* previous,
                                                    const stat::statistic_node* traffic = nullptr,
                                                    std::int64_t now_ms = -1);
  ~resource_flow_rules();

  /// Checks every rule (specific limitApp first); blocks on the first that fails.
  slot_verdict check(const check_context& ctx, entry_tokens& tokens) const noexcept {
    const std::size_t first = spend_leases(ctx, tokens);
    return first == size_ ? slot_verdict::pass() : check_from(first, ctx, tokens);
  }

  /** The usual case of check(), inline: the leading rules that count on the resource's own
      node (QPS, reject, limitApp default, strategy direct, no dry run) take a pass from their
      admission window's lease to this thread (admission_window::spend_lease), with check()'s
      bookkeeping. Returns how many leading rules passed that way; check_from() decides the rest. */
  std::size_t spend_leases(const check_context& ctx, entry_tokens& tokens) const noexcept {
    if (leased_.empty() || ctx.now_ms < 0) {
      return 0;
    }
    const std::int64_t w = ctx.cluster.bucket_divider().divide(ctx.now_ms);
    const stat::writer_shard ws = stat::this_thread_shard();
    std::size_t i = 0;
    for (; i < leased_.size(); ++i) {
      if (!leased_[i]->spend_lease(w, ctx.acquire, ws)) {
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
  /// A later slot blocked the entry: give back what check() took.
  void on_blocked_later(const check_context& ctx, entry_tokens& tokens) const noexcept;
  void on_exit(const exit_context& ctx, entry_tokens& tokens) const noexcept;
  /// Calls `f(rule, rule_index, lease)` for each clusterMode rule (control plane).
  void for_each_lease(const std::function<void(const flow_rule&, std::int32_t,
                                               const std::shared_ptr<cluster_lease>&)>& f) const;

  struct impl;

 private:
  explicit resource_flow_rules(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
  std::size_t size_ = 0;
  std::vector<flow::default_controller*> leased_;  // the leading rules spend_leases() serves
};

}  // namespace floodgate
