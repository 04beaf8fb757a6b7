#include "config/rule_sections.hpp"

#include "config/cluster_section.hpp"
#include "config/map_reader.hpp"
#include "rules/blank.hpp"

#include <array>
#include <string>
#include <string_view>
#include <unordered_map>

namespace floodgate::config::detail {

namespace {

// The readers check the schema only: keys, types, enum names, required keys. What the values
// mean (ranges, combinations) is checked once, by each rule type's validate() (rules/*.cpp),
// which the loader runs afterwards and locates in the file.

void read_number(map_reader& m, std::string_view key, double& out,
                 presence p = presence::optional) {
  if (auto v = m.number(key, p)) out = *v;
}

void read_int(map_reader& m, std::string_view key, std::int32_t& out,
              presence p = presence::optional) {
  if (auto v = m.integer(key, p)) out = *v;
}

void read_name_and_resource(map_reader& m, std::string& name, std::string& resource) {
  if (auto v = m.string("name")) name = *v;
  if (auto v = m.string("resource", presence::required)) resource = *v;
}

/// What Sentinel's dashboard stores with a rule it publishes (its rule entities, as its Nacos
/// and Apollo publishers write them): whose rule it is and when it changed.
constexpr std::array<std::string_view, 5> sentinel_dashboard_keys = {"app", "ip", "port",
                                                                     "gmtCreate", "gmtModified"};

/// `keys` and the keys every Sentinel rule may carry (read_sentinel_extras()).
std::vector<key_spec> with_sentinel_extras(std::initializer_list<key_spec> keys) {
  std::vector<key_spec> all(keys);
  all.push_back({"id"});
  all.push_back({"regex"});
  for (const std::string_view key : sentinel_dashboard_keys) all.push_back({key});
  return all;
}

/** Keys Sentinel's rule JSON carries that mean nothing here: accepted in their harmless form so
    that Sentinel rules paste unchanged, rejected where they would ask for something unsupported. */
void read_sentinel_extras(map_reader& m) {
  if (const YAML::Node* id = m.node("id"); id != nullptr && !id->IsScalar()) {
    m.error("id", "must be a number or a string");
  }
  for (const std::string_view key : sentinel_dashboard_keys) {
    if (const YAML::Node* v = m.node(key); v != nullptr && !v->IsScalar()) {
      m.error(key, "must be a number or a string (Sentinel dashboard metadata, ignored)");
    }
  }
  if (m.boolean("regex").value_or(false)) {
    m.error("regex", "regular-expression resources are not supported");
  }
}

/// Sentinel's cluster keys where floodgate has no cluster mode (paramFlow): only their defaults.
void read_unsupported_cluster_mode(map_reader& m) {
  if (m.boolean("clusterMode").value_or(false)) {
    m.error("clusterMode", "cluster mode is supported on flow rules only");
  }
  if (const YAML::Node* c = m.node("clusterConfig"); c != nullptr && !c->IsMap()) {
    m.error("clusterConfig", "must be a mapping");
  }
}

/// `limitApp` where Sentinel ignores it (degrade, system, paramFlow): only its default is allowed.
void read_ignored_limit_app(map_reader& m) {
  if (auto v = m.string("limitApp"); v && !v->empty() && *v != "default") {
    m.error("limitApp", "is not supported on this rule type (only \"default\")");
  }
}

flow_rule read_flow(map_reader& m) {
  flow_rule r;
  read_name_and_resource(m, r.name, r.resource);
  if (auto v = m.enumeration("grade", flow_grades)) r.grade = *v;
  read_number(m, "count", r.count, presence::required);
  if (auto v = m.string("limitApp")) {
    r.limit_app = rules_detail::is_blank(*v) ? "default" : *v;  // Sentinel: a blank limitApp means default
  }
  if (auto v = m.enumeration("strategy", flow_strategies)) r.strategy = *v;
  if (auto v = m.string("refResource")) r.ref_resource = *v;
  if (auto v = m.enumeration("controlBehavior", control_behaviors)) r.behavior = *v;
  read_int(m, "warmUpPeriodSec", r.warm_up_period_sec);
  read_int(m, "maxQueueingTimeMs", r.max_queueing_time_ms);
  if (auto v = m.boolean("dryRun")) r.dry_run = *v;
  read_flow_cluster(m, r);
  read_sentinel_extras(m);
  return r;
}

degrade_rule read_degrade(map_reader& m) {
  degrade_rule r;
  read_name_and_resource(m, r.name, r.resource);
  if (auto v = m.enumeration("grade", degrade_grades)) r.grade = *v;
  // An adaptive breaker has no threshold and no OPEN time: count and timeWindow are required of
  // the binary grades only (validate() reports them on an adaptive rule).
  const bool adaptive = r.grade == degrade_grade::adaptive;
  const presence binary_only = adaptive ? presence::optional : presence::required;
  if (adaptive) r.stat_interval_ms = adaptive_default_stat_interval_ms;
  read_number(m, "count", r.count, binary_only);
  read_number(m, "slowRatioThreshold", r.slow_ratio_threshold);
  read_int(m, "minRequestAmount", r.min_request_amount);
  read_int(m, "statIntervalMs", r.stat_interval_ms);
  read_int(m, "timeWindow", r.time_window_sec, binary_only);
  read_number(m, "k", r.k);
  read_ignored_limit_app(m);
  read_sentinel_extras(m);
  return r;
}

authority_rule read_authority(map_reader& m) {
  authority_rule r;
  read_name_and_resource(m, r.name, r.resource);
  if (auto v = m.enumeration("strategy", authority_strategies)) r.strategy = *v;
  if (auto v = m.string("limitApp", presence::required)) r.limit_app = *v;
  read_sentinel_extras(m);
  return r;
}

system_rule read_system(map_reader& m) {
  system_rule r;
  if (auto v = m.string("name")) r.name = *v;
  if (auto v = m.number("highestSystemLoad")) r.highest_system_load = *v;
  if (auto v = m.number("highestCpuUsage")) r.highest_cpu_usage = *v;
  if (auto v = m.whole_number("avgRt")) r.avg_rt = *v;  // Sentinel: long
  if (auto v = m.whole_number("maxThread")) r.max_thread = *v;
  if (auto v = m.number("qps")) r.qps = *v;
  if (auto v = m.string("resource"); v && !v->empty()) {
    m.error("resource", "system rules are global; remove resource");
  }
  read_ignored_limit_app(m);
  read_sentinel_extras(m);
  return r;
}

param_selector read_param_selector(map_reader& m) {
  param_selector s;
  if (auto v = m.enumeration("from", param_sources, presence::required)) s.from = *v;
  if (auto v = m.string("name")) s.name = *v;
  return s;
}

std::vector<param_flow_item> read_param_items(map_reader& m) {
  std::vector<param_flow_item> items;
  const YAML::Node* list = m.node("items");
  if (list == nullptr) return items;
  if (!list->IsSequence()) {
    m.error("items", "must be a list of {value, count}");
    return items;
  }
  const node_path list_path = m.path_of("items");
  std::unordered_map<std::string, std::size_t> seen;  // value → index of its first item
  std::size_t i = 0;
  for (auto it = list->begin(); it != list->end() && !m.doc().exhausted(); ++it, ++i) {
    const YAML::Node element = *it;
    const node_path path = list_path.index(i);
    if (!element.IsMap()) {
      m.doc().error(location_of(element), path.actual, "must be a mapping {value, count}");
      continue;
    }
    map_reader item(m.doc(), element, path, {{"value", "object"}, {"count"}, {"classType"}});
    if (list_path.actual != list_path.canonical) item.prefer_aliases();
    param_flow_item out;
    if (auto v = item.string("value", presence::required)) out.value = *v;
    // Sentinel's ParamFlowItem count is an Integer.
    if (auto v = item.whole_number("count", presence::required)) out.count = *v;
    item.string("classType");  // Sentinel's Java type name; values are matched as text
    if (item.has("value")) {
      const auto [first, inserted] = seen.emplace(out.value, i);
      if (!inserted) {
        item.error("value", "duplicate value \"" + map_reader::abbreviate(out.value) +
                                "\" (first at " + list_path.actual + "[" +
                                std::to_string(first->second) + "])");
      }
    }
    items.push_back(std::move(out));
  }
  return items;
}

/// `param: {from, name}` and `paramIdx`, as paramFlow and hotKeys rules name their parameter.
void read_param_choice(map_reader& m, std::optional<param_selector>& param,
                       std::optional<std::int32_t>& param_idx) {
  if (const YAML::Node* p = m.node("param")) {
    if (p->IsMap()) {
      map_reader selector(m.doc(), *p, m.path_of("param"), {{"from"}, {"name"}});
      param = read_param_selector(selector);
    } else {
      m.error("param", "must be a mapping {from, name}");
      param.emplace();  // stands in, so validate() does not also say that none was given
    }
  }
  param_idx = m.integer("paramIdx");
  if (!param_idx && m.node("paramIdx") != nullptr) {
    param_idx = 0;  // the same: its error is said once, as what it is
  }
}

param_flow_rule read_param_flow(map_reader& m) {
  param_flow_rule r;
  read_name_and_resource(m, r.name, r.resource);
  read_param_choice(m, r.param, r.param_idx);
  if (auto v = m.enumeration("grade", flow_grades)) r.grade = *v;
  read_number(m, "count", r.count, presence::required);
  read_int(m, "burstCount", r.burst_count);
  read_int(m, "durationInSec", r.duration_in_sec);
  if (auto v = m.enumeration("controlBehavior", control_behaviors)) r.behavior = *v;
  read_int(m, "maxQueueingTimeMs", r.max_queueing_time_ms);
  r.items = read_param_items(m);
  read_ignored_limit_app(m);
  read_unsupported_cluster_mode(m);
  read_sentinel_extras(m);
  return r;
}

hot_keys_rule read_hot_keys(map_reader& m) {
  hot_keys_rule r;
  read_name_and_resource(m, r.name, r.resource);
  read_param_choice(m, r.param, r.param_idx);
  read_int(m, "windowSec", r.window_sec);
  read_int(m, "top", r.top);
  read_number(m, "threshold", r.threshold, presence::required);
  return r;
}

template <class Rule, class Read>
void read_section(map_reader& root, std::string_view key, std::vector<Rule>& out,
                  std::vector<bool>& clean, const std::vector<key_spec>& keys, Read read) {
  const YAML::Node* list = root.node(key);
  if (list == nullptr) {
    // `flow:` with nothing after it is where a half-written file stops: never "no rules".
    if (root.given_empty(key)) {
      root.error(key, "has no value (a half-written file?); write " + std::string(key) +
                          ": [] for no rules");
    }
    return;
  }
  if (!list->IsSequence()) {
    root.error(key, "must be a list of rules");
    return;
  }
  document_reader& doc = root.doc();
  const node_path section = root.path_of(key);
  std::size_t i = 0;
  for (auto it = list->begin(); it != list->end() && !doc.exhausted(); ++it, ++i) {
    const YAML::Node element = *it;
    const node_path path = section.index(i);
    if (!doc.spend(location_of(element))) return;
    if (!element.IsMap()) {
      doc.error(location_of(element), path.actual, "must be a mapping (one rule)");
      continue;
    }
    const std::size_t errors_before = doc.error_count();
    map_reader rule(doc, element, path, keys);
    out.push_back(read(rule));
    clean.push_back(doc.error_count() == errors_before);
  }
}

}  // namespace

void read_rule_document(document_reader& doc, const YAML::Node& root, rule_set& out,
                        clean_rules& clean) {
  map_reader top(doc, root, {},
                 {{"flow"}, {"degrade"}, {"authority"}, {"system"}, {"paramFlow"}, {"hotKeys"},
                  {"cluster"}, {"rateLimitHeaders"}});
  read_cluster_section(top, out);
  out.rate_limit_headers = top.enumeration("rateLimitHeaders", rate_limit_header_styles);
  read_section(top, "flow", out.flow, clean.flow,
               with_sentinel_extras({{"name"},
                                     {"resource"},
                                     {"grade"},
                                     {"count"},
                                     {"limitApp"},
                                     {"strategy"},
                                     {"refResource"},
                                     {"controlBehavior"},
                                     {"warmUpPeriodSec"},
                                     {"maxQueueingTimeMs"},
                                     {"dryRun"},
                                     {"clusterMode"},
                                     {"clusterConfig"}}),
               read_flow);
  read_section(top, "degrade", out.degrade, clean.degrade,
               with_sentinel_extras({{"name"},
                                     {"resource"},
                                     {"grade"},
                                     {"count"},
                                     {"slowRatioThreshold"},
                                     {"minRequestAmount"},
                                     {"statIntervalMs"},
                                     {"timeWindow"},
                                     {"k"},
                                     {"limitApp"}}),
               read_degrade);
  read_section(top, "authority", out.authority, clean.authority,
               with_sentinel_extras({{"name"}, {"resource"}, {"strategy"}, {"limitApp"}}),
               read_authority);
  read_section(top, "system", out.system, clean.system,
               with_sentinel_extras({{"name"},
                                     {"highestSystemLoad"},
                                     {"highestCpuUsage"},
                                     {"avgRt"},
                                     {"maxThread"},
                                     {"qps"},
                                     {"resource"},
                                     {"limitApp"}}),
               read_system);
  read_section(top, "paramFlow", out.param_flow, clean.param_flow,
               with_sentinel_extras({{"name"},
                                     {"resource"},
                                     {"param"},
                                     {"paramIdx"},
                                     {"grade"},
                                     {"count"},
                                     {"burstCount"},
                                     {"durationInSec"},
                                     {"controlBehavior"},
                                     {"maxQueueingTimeMs"},
                                     {"items", "paramFlowItemList"},
                                     {"limitApp"},
                                     {"clusterMode"},
                                     {"clusterConfig"}}),
               read_param_flow);
  read_section(
      top, "hotKeys", out.hot_keys, clean.hot_keys,
      {{"name"}, {"resource"}, {"param"}, {"paramIdx"}, {"windowSec"}, {"top"}, {"threshold"}},
      read_hot_keys);
}

}  // namespace floodgate::config::detail
