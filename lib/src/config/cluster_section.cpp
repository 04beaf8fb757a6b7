#include "config/cluster_section.hpp"

namespace floodgate::config::detail {

namespace {

/// The window a clusterMode rule is counted in on Redis (cluster/lease_planner.hpp: buckets of
/// bucket_ms); the rules library does not link the Redis adapter, so the shape is restated here.
constexpr std::int32_t redis_window_buckets = 10;
constexpr std::int32_t redis_window_ms = 1000;

/// One `redis` URL, checked where it is written.
void read_url(document_reader& doc, const YAML::Node& node, const std::string& path,
              std::vector<std::string>& out) {
  if (!map_reader::textual(node)) {  // a tag other than !!str would be read as its raw text
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

/** The keys Sentinel's ClusterFlowConfig serialises for its token server, so that a rule pasted
    from Sentinel's JSON loads unchanged. Each is checked for its type and range. The window
    keys describe the window the limit is counted in: for a clusterMode rule they must be the
    one floodgate keeps on Redis (Sentinel's default, ten buckets over 1000 ms). The others
    steer Sentinel's token server and client (how long a client may hold a token, what a
    refused prioritized request does, when an absent client's tokens are dropped, a prefetch
    ratio), which floodgate does differently (leases that expire, heartbeats, batches sized by
    demand): accepted and ignored. */
void read_sentinel_token_server_keys(map_reader& c, bool cluster_mode) {
  const auto code_in = [&](std::string_view key, std::int32_t highest, const char* meaning) {
    if (auto v = c.integer(key); v && (*v < 0 || *v > highest)) {
      c.error(key, std::string("must be ") + meaning);
    }
  };
  code_in("strategy", 0, "0 (normal, Sentinel's only cluster strategy)");
  code_in("resourceTimeoutStrategy", 1, "0 (ignore) or 1 (release the token)");
  code_in("acquireRefuseStrategy", 2, "0, 1 or 2");
  for (const std::string_view key : {"resourceTimeout", "clientOfflineTime"}) {
    if (auto v = c.integer(key); v && *v < 0) c.error(key, "must be >= 0");
  }
  if (auto v = c.number("prefetchCntRatio"); v && (*v < 0 || *v > 1)) {
    c.error("prefetchCntRatio", "must be between 0 and 1");
  }
  const auto sample_count = c.integer("sampleCount");
  const auto window_ms = c.integer("windowIntervalMs");
  if (sample_count && *sample_count <= 0) c.error("sampleCount", "must be > 0");
  if (window_ms && *window_ms <= 0) c.error("windowIntervalMs", "must be > 0");
  if (!cluster_mode) return;  // ignored with the rest of the clusterConfig
  if (sample_count && *sample_count != redis_window_buckets) {
    c.error("sampleCount", "must be " + std::to_string(redis_window_buckets) +
                               ": a clusterMode rule is counted on Redis in ten 100 ms buckets");
  }
  if (window_ms && *window_ms != redis_window_ms) {
    c.error("windowIntervalMs", "must be " + std::to_string(redis_window_ms) +
                                    ": a clusterMode rule is counted on Redis over one second");
  }
}

}  // namespace

void read_cluster_section(map_reader& top, rule_set& out) {
  const YAML::Node* section = top.node("cluster");
  if (section == nullptr) {
    if (top.given_empty("cluster")) {
      top.error("cluster", "has no value (a half-written file?); leave it out for no Redis");
    }
    return;
  }
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
    m.error("clusterConfig",
            "must be a mapping {thresholdType, fallbackToLocalWhenFail, "
            "fallbackCount}");
    return;
  }
  map_reader c(m.doc(), *config, m.path_of("clusterConfig"),
               {{"thresholdType"},
                {"fallbackToLocalWhenFail"},
                {"fallbackCount"},
                {"flowId"},
                {"strategy"},
                {"sampleCount"},
                {"windowIntervalMs"},
                {"resourceTimeout"},
                {"resourceTimeoutStrategy"},
                {"acquireRefuseStrategy"},
                {"clientOfflineTime"},
                {"prefetchCntRatio"}});
  // Sentinel's flowId names the rule on its token server; keys here come from the rule itself.
  if (const YAML::Node* id = c.node("flowId"); id != nullptr && !id->IsScalar()) {
    c.error("flowId", "must be a number or a string");
  }
  read_sentinel_token_server_keys(c, r.cluster_mode);
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
