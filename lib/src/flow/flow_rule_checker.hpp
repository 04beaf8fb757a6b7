// Which node a flow rule measures for an entry (Sentinel's FlowRuleChecker node selection).
#pragma once

#include <floodgate/chain/slot.hpp>
#include "flow/flow_request.hpp"
#include <floodgate/rules/flow_rule.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace floodgate::node {
class cluster_node;
class node_registry;
}  // namespace floodgate::node

namespace floodgate::flow {

/// The callers a rule's `limitApp` covers.
enum class limit_app_kind : std::uint8_t {
  all,     ///< `default` (or empty): every origin, measured on the resource's cluster node
  other,   ///< `other`: origins no other rule of the resource names
  origin,  ///< one named origin
};

/// `default` or empty → all; `other` → other; anything else → one origin.
limit_app_kind classify_limit_app(std::string_view limit_app) noexcept;

/** Sentinel's isOtherOrigin: `origin` is non-empty and no rule of the resource has it as its
    limitApp. `named` holds the limitApps of all the resource's rules. */
bool is_other_origin(std::string_view origin, std::span<const std::string> named) noexcept;

/** Sentinel's selectReferenceNode, for RELATE and CHAIN rules: the referenced resource's cluster
    node (read only), or this context's default node when `refResource` names the context. */
selected_node select_reference_node(const flow_rule& rule, const check_context& ctx,
                                    bool chain_exclusive) noexcept;

/** The node select_node() gives `rule` where that node is exclusive (the rule books its own
    admissions on it): `resource` for direct `default`, the named origin's node for a direct
    named-origin rule, the context's default node for chain `default`. Found, never created
    (control plane): null when the node does not exist yet, or the rule's node is shared. */
const stat::statistic_node* find_booked_node(const flow_rule& rule, limit_app_kind kind,
                                             const node::node_registry& nodes,
                                             const node::cluster_node& resource) noexcept;

/** Sentinel's selectNodeByRequesterAndStrategy. Empty (the rule does not apply) when the entry's
    origin is not one the rule covers, when a RELATE resource was never entered, when a CHAIN
    rule names another context, or when the node is past a cap.

    | limitApp     | direct       | relate                | chain (refResource == context) |
    |--------------|--------------|-----------------------|--------------------------------|
    | `default`    | cluster node | refResource's cluster | this context's default node    |
    | == origin    | origin node  | refResource's cluster | this context's default node    |
    | `other` (*)  | origin node  | refResource's cluster | this context's default node    |

    (*) when the origin is non-empty and no rule of the resource names it.

    The node is exclusive (the rule sees every pass it counts) for direct `default`, direct
    named-origin and chain `default` rules. Inline: it runs for every rule of every entry.
*/
inline selected_node select_node(const flow_rule& rule, limit_app_kind kind,
                                 const check_context& ctx,
                                 std::span<const std::string> named) noexcept {
  const bool direct = rule.strategy == flow_strategy::direct;
  switch (kind) {
    case limit_app_kind::all:
      if (direct) {
        return {&ctx.cluster, &ctx.cluster, nullptr, true};
      }
      return select_reference_node(rule, ctx, true);
    case limit_app_kind::origin:
      if (ctx.origin != rule.limit_app) {
        return {};
      }
      if (direct) {
        return {ctx.origin_node, ctx.origin_node, nullptr, true};
      }
      // The default node counts every origin of the context: its statistics, plus the rule's
      // reservations for its own admissions under way (default_controller).
      return select_reference_node(rule, ctx, false);
    case limit_app_kind::other:
      if (!is_other_origin(ctx.origin, named)) {
        return {};
      }
      if (direct) {
        // Per-origin nodes vary by entry: one rule-owned counter cannot stand for them all.
        return {ctx.origin_node, ctx.origin_node, nullptr, false};
      }
      return select_reference_node(rule, ctx, false);
  }
  return {};
}

}  // namespace floodgate::flow
