#include <floodgate/flow/flow_rule_checker.hpp>
#include <floodgate/node/node_registry.hpp>

#include <algorithm>

namespace floodgate::flow {

namespace {

constexpr std::string_view default_app = "default";
constexpr std::string_view other_app = "other";

selected_node reference_node(const flow_rule& rule, const check_context& ctx,
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

}  // namespace

limit_app_kind classify_limit_app(std::string_view limit_app) noexcept {
  if (limit_app.empty() || limit_app == default_app) {
    return limit_app_kind::all;
  }
  return limit_app == other_app ? limit_app_kind::other : limit_app_kind::origin;
}

bool is_other_origin(std::string_view origin, std::span<const std::string> named) noexcept {
  return !origin.empty() &&
         std::none_of(named.begin(), named.end(), [&](const std::string& n) { return n == origin; });
}

selected_node select_node(const flow_rule& rule, limit_app_kind kind, const check_context& ctx,
                          std::span<const std::string> named) noexcept {
  const bool direct = rule.strategy == flow_strategy::direct;
  switch (kind) {
    case limit_app_kind::all:
      if (direct) {
        return {&ctx.cluster, &ctx.cluster, nullptr, true};
      }
      return reference_node(rule, ctx, true);
    case limit_app_kind::origin:
      if (ctx.origin != rule.limit_app) {
        return {};
      }
      if (direct) {
        return {ctx.origin_node, ctx.origin_node, nullptr, true};
      }
      // The default node counts every origin of the context: check-then-act on it.
      return reference_node(rule, ctx, false);
    case limit_app_kind::other:
      if (!is_other_origin(ctx.origin, named)) {
        return {};
      }
      if (direct) {
        // Per-origin nodes vary by entry: one rule-owned counter cannot stand for them all.
        return {ctx.origin_node, ctx.origin_node, nullptr, false};
      }
      return reference_node(rule, ctx, false);
  }
  return {};
}

}  // namespace floodgate::flow
