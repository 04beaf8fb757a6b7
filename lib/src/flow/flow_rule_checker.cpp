#include "flow/flow_rule_checker.hpp"
#include "node/node_registry.hpp"

#include <algorithm>

namespace floodgate::flow {

namespace {

constexpr std::string_view default_app = "default";
constexpr std::string_view other_app = "other";

}  // namespace

selected_node select_reference_node(const flow_rule& rule, const check_context& ctx,
                                    bool chain_exclusive) noexcept {
  if (rule.ref_resource.empty()) {
    return {};
  }
  if (rule.strategy == flow_strategy::relate) {
    // Another resource's traffic: read only, never booked into.
    return {ctx.registry.find_resource(rule.ref_resource), nullptr, nullptr, false};
  }
  if (rule.strategy == flow_strategy::chain && rule.ref_resource == ctx.context_name) {
    return {&ctx.node, nullptr, &ctx.node, chain_exclusive};
  }
  return {};
}

const stat::statistic_node* find_booked_node(const flow_rule& rule, limit_app_kind kind,
                                             const node::node_registry& nodes,
                                             const node::cluster_node& resource) noexcept {
  const bool direct = rule.strategy == flow_strategy::direct;
  if (kind == limit_app_kind::all && direct) {
    return &resource;
  }
  if (kind == limit_app_kind::origin && direct) {
    return nodes.find_origin(resource, rule.limit_app);
  }
  if (kind == limit_app_kind::all && rule.strategy == flow_strategy::chain &&
      !rule.ref_resource.empty()) {
    const node::entrance_node* context = nodes.find_entrance(rule.ref_resource);
    return context != nullptr ? nodes.find_default(*context, resource) : nullptr;
  }
  return nullptr;
}

limit_app_kind classify_limit_app(std::string_view limit_app) noexcept {
  if (limit_app.empty() || limit_app == default_app) {
    return limit_app_kind::all;
  }
  return limit_app == other_app ? limit_app_kind::other : limit_app_kind::origin;
}

bool is_other_origin(std::string_view origin, std::span<const std::string> named) noexcept {
  return !origin.empty() && std::none_of(named.begin(), named.end(),
                                         [&](const std::string& n) { return n == origin; });
}

}  // namespace floodgate::flow
