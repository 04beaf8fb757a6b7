#include "config/cluster_section.hpp"

namespace floodgate::config::detail {

namespace {

/// One `redis` URL, checked where it is written.
void read_url(document_reader& doc, const YAML::Node& node, const std::string& path,
              std::vector<std::string>& out) {
  if (!node.IsScalar()) {
    doc.error(location_of(node), path, "must be a redis:// URL");
    return;
  }
  std::string why;
  if (!parse_redis_url(node.Scalar(), why)) {
    doc.error(location_of(node), path, why);
    return;
  }
  out.push_back(node.Scalar());
}

}  // namespace

void read_cluster_section(map_reader& top, rule_set& out) {
  const YAML::Node* section = top.node("cluster");
  if (section == nullptr) return;
  if (!section->IsMap()) {
    top.error("cluster", "must be a mapping {redis, namespace, timeoutMs}");
    return;
  }
  document_reader& doc = top.doc();
  map_reader m(doc, *section, top.path_of("cluster"), {{"redis"}, {"namespace"}, {"timeoutMs"}});
  cluster_config c;
  if (const YAML::Node* redis = m.node("redis")) {
    const node_path path = m.path_of("redis");
    if (redis->IsSequence()) {
      if (redis->size() == 0) m.error("redis", "must list at least one redis:// URL");
      std::size_t i = 0;
      for (auto it = redis->begin(); it != redis->end(); ++it, ++i) {
        read_url(doc, *it, path.index(i).actual, c.redis);
      }
    } else {
      read_url(doc, *redis, path.actual, c.redis);
    }
  }
  if (auto v = m.string("namespace")) c.name_space = *v;
  if (auto v = m.integer("timeoutMs")) c.timeout_ms = *v;
  out.cluster = std::move(c);
}

void read_flow_cluster(map_reader& m, flow_rule& r) {
  if (auto v = m.boolean("clusterMode")) r.cluster_mode = *v;
  const YAML::Node* config = m.node("clusterConfig");
  if (config == nullptr) return;
  if (!config->IsMap()) {
    m.error("clusterConfig", "must be a mapping {thresholdType, fallbackToLocalWhenFail, "
                             "fallbackCount}");
    return;
  }
  map_reader c(m.doc(), *config, m.path_of("clusterConfig"),
               {{"thresholdType"}, {"fallbackToLocalWhenFail"}, {"fallbackCount"}, {"flowId"}});
  // Sentinel's flowId names the rule on its token server; keys here come from the rule itself.
  if (const YAML::Node* id = c.node("flowId"); id != nullptr && !id->IsScalar()) {
    c.error("flowId", "must be a number or a string");
  }
  flow_cluster_config out;
  if (auto v = c.enumeration("thresholdType", cluster_threshold_types)) out.threshold_type = *v;
  if (auto v = c.boolean("fallbackToLocalWhenFail")) out.fallback_to_local_when_fail = *v;
  if (auto v = c.number("fallbackCount")) {
    if (*v < 0) c.error("fallbackCount", "must be >= 0");
    out.fallback_count = *v;
  }
  // Pasted Sentinel rules carry a clusterConfig with clusterMode false: checked, then ignored.
  if (r.cluster_mode) r.cluster_config = out;
}

}  // namespace floodgate::config::detail
