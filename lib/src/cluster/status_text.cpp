// The adapter's state as the JSON of admin `GET /floodgate/cluster`.
#include <floodgate/cluster/redis_cluster.hpp>
#include <floodgate/rules/cluster_config.hpp>

#include <cstdio>

namespace floodgate::cluster {

namespace {

std::string_view mode_name(cluster_mode m) {
  return m == cluster_mode::global ? "global" : "fallback";
}

std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

std::string status_json(const redis_cluster_status& s) {
  std::string out = "{\"endpoints\":[";
  for (std::size_t i = 0; i < s.endpoints.size(); ++i) {
    out += (i ? "," : "") + quoted(without_password(s.endpoints[i]));
  }
  out += "],\"redisCluster\":" + std::string(s.redis_cluster ? "true" : "false") +
         ",\"state\":" + quoted(s.state) + ",\"lastError\":" + quoted(s.last_error) +
         ",\"liveInstances\":" + std::to_string(s.live_instances) +
         ",\"commands\":" + std::to_string(s.commands) + ",\"rules\":[";
  for (std::size_t i = 0; i < s.rules.size(); ++i) {
    const auto& r = s.rules[i];
    out += (i ? "," : "");
    out += "{\"resource\":" + quoted(r.resource) + ",\"rule\":" + quoted(r.rule) +
           ",\"mode\":" + quoted(mode_name(r.mode)) + ",\"limit\":" + number(r.limit) +
           ",\"fallbackCount\":" + number(r.fallback_count) +
           ",\"lease\":" + std::to_string(r.lease) + ",\"spent\":" + std::to_string(r.spent) +
           ",\"lastError\":" + quoted(r.last_error) + "}";
  }
  return out + "]}";
}

}  // namespace floodgate::cluster
