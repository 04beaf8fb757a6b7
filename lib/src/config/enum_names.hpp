// Names of the rule enums as written in rule files, with Sentinel's aliases and numeric codes.
#pragma once

#include <floodgate/rules/authority_rule.hpp>
#include <floodgate/rules/degrade_rule.hpp>
#include <floodgate/rules/flow_rule.hpp>
#include <floodgate/rules/param_flow_rule.hpp>
#include <floodgate/rules/rule_set.hpp>

#include <span>
#include <string_view>

namespace floodgate::config::detail {

/// One spelling of an enum value. The first entry for a value is its canonical name.
template <class Enum>
struct enum_name {
  std::string_view name;
  Enum value;
};

/// An enum's spellings, and whether Sentinel's numeric codes (the enumerator values) are accepted.
template <class Enum>
struct enum_table {
  std::span<const enum_name<Enum>> names;
  bool numeric_codes;

  /// The canonical name of `v`.
  constexpr std::string_view name_of(Enum v) const noexcept {
    for (const auto& n : names) {
      if (n.value == v) return n.name;
    }
    return {};
  }
};

inline constexpr enum_name<rate_limit_header_style> rate_limit_header_style_names[] = {
    {"off", rate_limit_header_style::off},
    {"draft03", rate_limit_header_style::draft03},
    {"ietf", rate_limit_header_style::ietf}};
inline constexpr enum_name<flow_grade> flow_grade_names[] = {
    {"qps", flow_grade::qps},
    {"concurrency", flow_grade::concurrency},
    {"thread", flow_grade::concurrency}};
inline constexpr enum_name<flow_strategy> flow_strategy_names[] = {
    {"direct", flow_strategy::direct},
    {"relate", flow_strategy::relate},
    {"chain", flow_strategy::chain}};
inline constexpr enum_name<control_behavior> control_behavior_names[] = {
    {"reject", control_behavior::reject},
    {"warm_up", control_behavior::warm_up},
    {"throttling", control_behavior::throttling},
    {"warm_up_throttling", control_behavior::warm_up_throttling},
    {"default", control_behavior::reject},
    {"rate_limiter", control_behavior::throttling},
    {"warm_up_rate_limiter", control_behavior::warm_up_throttling}};
inline constexpr enum_name<degrade_grade> degrade_grade_names[] = {
    {"slow_request_ratio", degrade_grade::slow_request_ratio},
    {"error_ratio", degrade_grade::error_ratio},
    {"error_count", degrade_grade::error_count},
    {"adaptive", degrade_grade::adaptive},
    {"sre", degrade_grade::adaptive}};
inline constexpr enum_name<authority_strategy> authority_strategy_names[] = {
    {"white", authority_strategy::white}, {"black", authority_strategy::black}};
inline constexpr enum_name<param_source> param_source_names[] = {
    {"header", param_source::header},
    {"query", param_source::query},
    {"client_ip", param_source::client_ip},
    {"origin", param_source::origin},
    {"path", param_source::path}};

inline constexpr enum_name<cluster_threshold_type> cluster_threshold_type_names[] = {
    {"global", cluster_threshold_type::global}, {"avg_local", cluster_threshold_type::avg_local}};

inline constexpr enum_table<rate_limit_header_style> rate_limit_header_styles{
    rate_limit_header_style_names, false};
inline constexpr enum_table<flow_grade> flow_grades{flow_grade_names, true};
inline constexpr enum_table<flow_strategy> flow_strategies{flow_strategy_names, true};
inline constexpr enum_table<control_behavior> control_behaviors{control_behavior_names, true};
inline constexpr enum_table<degrade_grade> degrade_grades{degrade_grade_names, true};
inline constexpr enum_table<authority_strategy> authority_strategies{authority_strategy_names,
                                                                     true};
inline constexpr enum_table<cluster_threshold_type> cluster_threshold_types{
    cluster_threshold_type_names, true};
/// Not a Sentinel field: names only.
inline constexpr enum_table<param_source> param_sources{param_source_names, false};

}  // namespace floodgate::config::detail
