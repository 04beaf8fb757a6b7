// to_yaml / to_json: the rules in the file's schema, for the admin API and round trips.
#include <floodgate/config/rule_file.hpp>

#include "config/enum_names.hpp"

#include <charconv>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace floodgate::config {

namespace {

using detail::enum_table;

/// Renders values and keys for one output format. Strings are always double-quoted with JSON
/// escapes, which YAML's double-quoted style reads the same way.
struct format {
  bool json;

  std::string key(std::string_view k) const {
    return json ? "\"" + std::string(k) + "\"" : std::string(k);
  }
  /// Enum names are plain identifiers: bare in YAML, quoted in JSON.
  std::string name(std::string_view n) const { return key(n); }

  static std::string string(std::string_view s) {
    std::string out = "\"";
    for (std::size_t i = 0; i < s.size(); ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default: {
          // C0 controls, DEL and the C1 controls (UTF-8 C2 80..C2 9F) are not printable in YAML.
          const bool c1 = c == 0xC2 && i + 1 < s.size() &&
                          static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
                          static_cast<unsigned char>(s[i + 1]) <= 0x9F;
          if (c < 0x20 || c == 0x7F || c1) {
            const unsigned code = c1 ? static_cast<unsigned char>(s[++i]) : c;
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04X", code);
            out += buf;
          } else {
            out += static_cast<char>(c);
          }
        }
      }
    }
    return out + "\"";
  }

  static std::string number(double v) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    return ec == std::errc{} ? std::string(buf, end) : std::string("0");
  }
  static std::string number(std::int32_t v) { return std::to_string(v); }
  static std::string boolean(bool v) { return v ? "true" : "false"; }

  template <class Enum>
  std::string enumeration(const enum_table<Enum>& table, Enum v) const {
    return name(table.name_of(v));
  }

  /// `{k: v, ...}` on one line.
  std::string inline_map(
      const std::vector<std::pair<std::string_view, std::string>>& fields) const {
    std::string out = "{";
    for (const auto& [k, v] : fields) {
      if (out.size() > 1) out += ", ";
      out += key(k) + ": " + v;
    }
    return out + "}";
  }
};

using fields = std::vector<std::pair<std::string_view, std::string>>;

void add_name(fields& out, const std::string& name) {
  if (!name.empty()) out.emplace_back("name", format::string(name));
}

fields fields_of(const flow_rule& r, const format& f) {
  fields out;
  add_name(out, r.name);
  out.emplace_back("resource", format::string(r.resource));
  out.emplace_back("grade", f.enumeration(detail::flow_grades, r.grade));
  out.emplace_back("count", format::number(r.count));
  out.emplace_back("limitApp", format::string(r.limit_app));
  out.emplace_back("strategy", f.enumeration(detail::flow_strategies, r.strategy));
  if (!r.ref_resource.empty()) out.emplace_back("refResource", format::string(r.ref_resource));
  out.emplace_back("controlBehavior", f.enumeration(detail::control_behaviors, r.behavior));
  out.emplace_back("warmUpPeriodSec", format::number(r.warm_up_period_sec));
  out.emplace_back("maxQueueingTimeMs", format::number(r.max_queueing_time_ms));
  out.emplace_back("dryRun", format::boolean(r.dry_run));
  if (r.cluster_mode) {
    const auto& c = r.cluster_config;
    out.emplace_back("clusterMode", "true");
    fields config{{"thresholdType", f.enumeration(detail::cluster_threshold_types, c.threshold_type)},
                  {"fallbackToLocalWhenFail", format::boolean(c.fallback_to_local_when_fail)}};
    if (c.fallback_count) config.emplace_back("fallbackCount", format::number(*c.fallback_count));
    out.emplace_back("clusterConfig", f.inline_map(config));
  }
  return out;
}

/// The `cluster:` section: one mapping, written after the rule sections.
void write_cluster(std::string& out, const format& f, const cluster_config& c) {
  fields config;
  if (!c.redis.empty()) {  // none: the process's default endpoint, as when the file names none
    std::string redis = "[";
    for (const std::string& url : c.redis) {
      if (redis.size() > 1) redis += ", ";
      redis += format::string(url);
    }
    config.emplace_back("redis", redis + "]");
  }
  config.emplace_back("namespace", format::string(c.name_space));
  config.emplace_back("timeoutMs", format::number(c.timeout_ms));
  const std::string body = f.inline_map(config);
  out += f.json ? "  " + f.key("cluster") + ": " + body + "\n" : "cluster: " + body + "\n";
}

fields fields_of(const degrade_rule& r, const format& f) {
  fields out;
  add_name(out, r.name);
  out.emplace_back("resource", format::string(r.resource));
  out.emplace_back("grade", f.enumeration(detail::degrade_grades, r.grade));
  // Each grade's own fields: an adaptive rule has k instead of a threshold and a time window.
  if (r.grade == degrade_grade::adaptive) {
    out.emplace_back("k", format::number(r.k));
  } else {
    out.emplace_back("count", format::number(r.count));
    out.emplace_back("slowRatioThreshold", format::number(r.slow_ratio_threshold));
  }
  out.emplace_back("minRequestAmount", format::number(r.min_request_amount));
  out.emplace_back("statIntervalMs", format::number(r.stat_interval_ms));
  if (r.grade != degrade_grade::adaptive) {
    out.emplace_back("timeWindow", format::number(r.time_window_sec));
  }
  return out;
}

fields fields_of(const authority_rule& r, const format& f) {
  fields out;
  add_name(out, r.name);
  out.emplace_back("resource", format::string(r.resource));
  out.emplace_back("strategy", f.enumeration(detail::authority_strategies, r.strategy));
  out.emplace_back("limitApp", format::string(r.limit_app));
  return out;
}

fields fields_of(const system_rule& r, const format&) {
  fields out;
  add_name(out, r.name);
  out.emplace_back("highestSystemLoad", format::number(r.highest_system_load));
  out.emplace_back("highestCpuUsage", format::number(r.highest_cpu_usage));
  out.emplace_back("avgRt", format::number(r.avg_rt));
  out.emplace_back("maxThread", format::number(r.max_thread));
  out.emplace_back("qps", format::number(r.qps));
  return out;
}

void add_param_choice(fields& out, const format& f, const std::optional<param_selector>& param,
                      const std::optional<std::int32_t>& param_idx) {
  if (param) {
    fields selector{{"from", f.enumeration(detail::param_sources, param->from)}};
    if (!param->name.empty()) selector.emplace_back("name", format::string(param->name));
    out.emplace_back("param", f.inline_map(selector));
  }
  if (param_idx) out.emplace_back("paramIdx", format::number(*param_idx));
}

fields fields_of(const param_flow_rule& r, const format& f) {
  fields out;
  add_name(out, r.name);
  out.emplace_back("resource", format::string(r.resource));
  add_param_choice(out, f, r.param, r.param_idx);
  out.emplace_back("grade", f.enumeration(detail::flow_grades, r.grade));
  out.emplace_back("count", format::number(r.count));
  out.emplace_back("burstCount", format::number(r.burst_count));
  out.emplace_back("durationInSec", format::number(r.duration_in_sec));
  out.emplace_back("controlBehavior", f.enumeration(detail::control_behaviors, r.behavior));
  out.emplace_back("maxQueueingTimeMs", format::number(r.max_queueing_time_ms));
  if (!r.items.empty()) {
    std::string items = "[";
    for (const auto& item : r.items) {
      if (items.size() > 1) items += ", ";
      items += f.inline_map(
          {{"value", format::string(item.value)}, {"count", format::number(item.count)}});
    }
    out.emplace_back("items", items + "]");
  }
  return out;
}

fields fields_of(const hot_keys_rule& r, const format& f) {
  fields out;
  add_name(out, r.name);
  out.emplace_back("resource", format::string(r.resource));
  add_param_choice(out, f, r.param, r.param_idx);
  out.emplace_back("windowSec", format::number(r.window_sec));
  out.emplace_back("top", format::number(r.top));
  out.emplace_back("threshold", format::number(r.threshold));
  return out;
}

/// YAML: block sections of block-mapping rules. JSON: one object per line.
template <class Rule>
void write_section(std::string& out, const format& f, std::string_view name,
                   const std::vector<Rule>& rules, bool last) {
  if (!f.json) {
    out += std::string(name) + ":";
    if (rules.empty()) out += " []";
    out += "\n";
    for (const Rule& r : rules) {
      const fields fs = fields_of(r, f);
      for (std::size_t i = 0; i < fs.size(); ++i) {
        out += (i == 0 ? "  - " : "    ") + std::string(fs[i].first) + ": " + fs[i].second + "\n";
      }
    }
    return;
  }
  out += "  " + f.key(name) + ": [";
  for (std::size_t i = 0; i < rules.size(); ++i) {
    out += i == 0 ? "\n    " : ",\n    ";
    out += f.inline_map(fields_of(rules[i], f));
  }
  out += rules.empty() ? "]" : "\n  ]";
  out += last ? "\n" : ",\n";
}

std::string write(const rule_set& rules, const format& f) {
  std::string out = f.json ? "{\n" : "";
  if (rules.rate_limit_headers) {  // first: a scalar, and the sections after it always follow
    const std::string value =
        format::string(detail::rate_limit_header_styles.name_of(*rules.rate_limit_headers));
    out += f.json ? "  " + f.key("rateLimitHeaders") + ": " + value + ",\n"
                  : "rateLimitHeaders: " + value + "\n";
  }
  write_section(out, f, "flow", rules.flow, false);
  write_section(out, f, "degrade", rules.degrade, false);
  write_section(out, f, "authority", rules.authority, false);
  write_section(out, f, "system", rules.system, false);
  write_section(out, f, "paramFlow", rules.param_flow, false);
  write_section(out, f, "hotKeys", rules.hot_keys, !rules.cluster);
  if (rules.cluster) write_cluster(out, f, *rules.cluster);
  if (f.json) out += "}\n";
  return out;
}

}  // namespace

std::string to_yaml(const rule_set& rules) { return write(rules, format{false}); }

std::string to_json(const rule_set& rules) { return write(rules, format{true}); }

}  // namespace floodgate::config
