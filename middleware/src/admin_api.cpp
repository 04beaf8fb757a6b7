#include <floodgate/beast/admin_api.hpp>
#include <floodgate/beast/blocked_response.hpp>
#include <floodgate/beast/metrics_handler.hpp>
#include <floodgate/beast/query_string.hpp>
#include <floodgate/beast/route_table.hpp>
#include <floodgate/config/rule_file.hpp>
#include <floodgate/config/rule_file_watcher.hpp>
#include <floodgate/rules/cluster_config.hpp>

#include "admin_json.hpp"
#include "dashboard_page.hpp"
#include "node/node_registry.hpp"
#include "utf8.hpp"

#include <boost/beast/http/field.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace floodgate::beast {

namespace json = boost::json;

namespace {

/// The tree is at most context::max_depth deep; this only guards against a corrupted list.
constexpr int max_tree_depth = 64;

void add_stats(json::object& o, const stat::statistic_node& n, std::int64_t now) {
  o["passQps"] = json_number(n.pass_qps(now));
  o["blockQps"] = json_number(n.block_qps(now));
  o["successQps"] = json_number(n.success_qps(now));
  o["exceptionQps"] = json_number(n.exception_qps(now));
  o["avgRt"] = json_number(n.avg_rt(now));
  o["minRt"] = json_number(n.min_rt(now));
  o["concurrency"] = n.concurrency();
  o["totalPass"] = n.total_pass(now);
  o["totalBlock"] = n.block_request(now);
}

json::array children_of(const node::child_list& list, std::int64_t now, int depth) {
  json::array out;
  if (depth > max_tree_depth) {
    return out;
  }
  for (const node::default_node* c = list.first(); c != nullptr; c = c->next_sibling()) {
    json::object o;
    o["resource"] = c->cluster().name();
    o["type"] = "resource";
    add_stats(o, *c, now);
    o["children"] = children_of(c->children(), now, depth + 1);
    out.push_back(std::move(o));
  }
  return out;
}

std::int64_t unix_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

http::response<http::string_body> json_response(http::status status, std::string body,
                                                unsigned version, bool keep_alive) {
  http::response<http::string_body> res{status, version};
  res.set(http::field::content_type, "application/json");
  // Origins and parameter values are the callers' bytes; JSON text is UTF-8 (RFC 8259).
  res.body() = detail::valid_utf8(std::move(body));
  res.keep_alive(keep_alive);
  res.prepare_payload();
  return res;
}

/// The dashboard: its scripts and style are inline, and the policy allows nothing else, so the
/// page loads nothing from elsewhere and a string that slipped into markup could not run.
http::response<http::string_body> page_response(unsigned version, bool keep_alive) {
  http::response<http::string_body> res{http::status::ok, version};
  res.set(http::field::content_type, "text/html; charset=utf-8");
  res.set("Content-Security-Policy", detail::dashboard_csp());
  res.set(http::field::cache_control, "no-store");
  res.set("X-Content-Type-Options", "nosniff");
  res.set("X-Frame-Options", "DENY");
  res.set("Referrer-Policy", "no-referrer");
  res.body() = detail::dashboard_html();
  res.keep_alive(keep_alive);
  res.prepare_payload();
  return res;
}

}  // namespace

http::response<http::string_body> admin_api::handle(http::verb method, std::string_view target,
                                                    unsigned version, bool keep_alive) const {
  const std::string_view path = target_path(target);
  const auto ok = [&](const json::value& v) {
    return json_response(http::status::ok, json_text(v), version, keep_alive);
  };
  const bool known = path == "/" || path == "/floodgate/resources" || path == "/floodgate/tree" ||
                     path == "/floodgate/origins" || path == "/floodgate/rules" ||
                     path == "/floodgate/breakers" || path == "/floodgate/hotkeys" ||
                     (path == "/floodgate/reload" && options_.watcher != nullptr) ||
                     (path == "/floodgate/cluster" && options_.cluster) ||
                     (path == "/metrics" && options_.metrics != nullptr);
  const auto method_not_allowed = [&] {
    auto res = make_error_response(http::status::method_not_allowed, "method not allowed",
                                   version, keep_alive);
    res.set(http::field::allow, "GET");
    return res;
  };
  if (method == http::verb::head) {
    // GET only; and a response to HEAD has no body (one would be read as the next response).
    auto res = method_not_allowed();
    drop_body_and_length(res);
    return res;
  }
  if (!known) {
    return make_error_response(http::status::not_found, "not found", version, keep_alive);
  }
  if (method != http::verb::get) {
    return method_not_allowed();
  }
  if (path == "/") {
    return page_response(version, keep_alive);
  }
  const std::int64_t now = engine_->time().now_ms();

  if (path == "/floodgate/resources") {
    std::vector<const node::cluster_node*> nodes;
    engine_->nodes().for_each_resource(
        [&](const node::cluster_node& n) { nodes.push_back(&n); });
    std::sort(nodes.begin(), nodes.end(),
              [](const auto* a, const auto* b) { return a->name() < b->name(); });
    json::array out;
    for (const auto* n : nodes) {
      json::object o;
      o["resource"] = n->name();
      add_stats(o, *n, now);
      out.push_back(std::move(o));
    }
    return ok(out);
  }
  if (path == "/floodgate/tree") {
    json::array entrances;
    for (const node::entrance_node* e = engine_->nodes().first_entrance(); e != nullptr;
         e = e->next()) {
      json::object o;
      o["resource"] = e->name();
      o["type"] = "entrance";
      o["passQps"] = json_number(e->pass_qps(now));
      o["blockQps"] = json_number(e->block_qps(now));
      o["successQps"] = json_number(e->success_qps(now));
      o["exceptionQps"] = json_number(e->exception_qps(now));
      o["avgRt"] = json_number(e->avg_rt(now));
      o["minRt"] = json_number(e->min_rt(
          now, static_cast<double>(engine_->nodes().windows().statistic_max_rt)));
      o["concurrency"] = e->concurrency();
      o["totalPass"] = e->total_pass(now);
      o["totalBlock"] = e->block_request(now);
      o["children"] = children_of(e->children(), now, 1);
      entrances.push_back(std::move(o));
    }
    json::object root;
    root["resource"] = "machine-root";
    root["type"] = "root";
    root["children"] = std::move(entrances);
    return ok(root);
  }
  if (path == "/floodgate/origins") {
    std::string scratch;
    const auto resource = find_query_param(target, "resource", scratch);
    if (!resource || resource->empty()) {
      return make_error_response(http::status::bad_request, "missing query parameter: resource",
                                 version, keep_alive);
    }
    std::vector<const node::origin_node*> origins;
    if (const auto* n = engine_->nodes().find_resource(*resource)) {
      for (const auto* o = n->first_origin(); o != nullptr; o = o->next()) {
        origins.push_back(o);
      }
    }
    std::sort(origins.begin(), origins.end(),
              [](const auto* a, const auto* b) { return a->origin() < b->origin(); });
    json::array out;
    for (const auto* o : origins) {
      json::object v;
      v["origin"] = o->origin();
      v["overflow"] = o->overflow();  // the node origins past the cap share
      add_stats(v, *o, now);
      out.push_back(std::move(v));
    }
    return ok(out);
  }
  if (path == "/floodgate/hotkeys") {
    std::string scratch;
    const auto resource = find_query_param(target, "resource", scratch);
    if (!resource || resource->empty()) {
      return make_error_response(http::status::bad_request, "missing query parameter: resource",
                                 version, keep_alive);
    }
    json::array out;
    for (const hot_key& k : engine_->hot_keys(*resource)) {
      json::object o;
      o["param"] = k.param;
      o["value"] = k.value;
      o["count"] = k.count;
      o["hot"] = k.hot;
      o["rule"] = k.rule;
      out.push_back(std::move(o));
    }
    return ok(out);
  }
  if (path == "/floodgate/rules") {
    rule_set rules = engine_->rules();
    if (rules.cluster) {
      // Redis passwords stay out of the API: `redis://user:***@host`.
      for (std::string& url : rules.cluster->redis) {
        url = without_password(url);
      }
    }
    return json_response(http::status::ok, config::to_json(rules), version,
                         keep_alive);
  }
  if (path == "/floodgate/breakers") {
    const std::int64_t unix_now = unix_now_ms();
    json::array out;
    engine_->for_each_breaker(
        [&](std::string_view resource, const circuit_breaker& b, std::int32_t index) {
          const breaker_state state = b.state();
          json::object o = breaker_json(resource, b, index, state, now);
          if (state == breaker_state::open) {
            o["nextProbeTime"] = unix_now + std::max<std::int64_t>(b.next_retry_ms() - now, 0);
          } else {
            o["nextProbeTime"] = nullptr;
          }
          out.push_back(std::move(o));
        });
    return ok(out);
  }
  if (path == "/floodgate/reload") {
    const json::object o = reload_json(options_.watcher->status());
    return ok(o);
  }
  if (path == "/floodgate/cluster") {
    return json_response(http::status::ok, options_.cluster(), version, keep_alive);
  }
  return options_.metrics->response(version, keep_alive);
}

}  // namespace floodgate::beast
