#include "cluster/redis_router.hpp"

#include "cluster/key_slot.hpp"

#include <charconv>

namespace floodgate::cluster::detail {

namespace {

std::string address_of(const std::string& host, std::uint16_t port) {
  return host + ":" + std::to_string(port);
}

redis_result not_connected() {
  redis_result out;
  out.error = "not connected";
  out.io = true;
  return out;
}

}  // namespace

bool redis_router::split_address(std::string_view text, std::string& host, std::uint16_t& port) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return false;
  const std::string_view p = text.substr(colon + 1);
  const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
  if (ec != std::errc{} || end != p.data() + p.size()) return false;
  host = text.substr(0, colon);
  return true;
}

void redis_router::close() noexcept {
  nodes_.clear();
  slot_owner_.clear();
  connected_ = false;
  cluster_ = false;
}

redis_connection* redis_router::node(const std::string& host, std::uint16_t port,
                                     std::string& why) {
  const std::string address = address_of(host, port);
  auto& c = nodes_[address];
  if (c && c->connected()) return c.get();
  c = std::make_unique<redis_connection>();
  redis_endpoint e = credentials_;
  e.host = host;
  e.port = port;
  why = c->connect(e, timeout_);
  return why.empty() ? c.get() : nullptr;
}

std::string redis_router::connect(const std::vector<redis_endpoint>& seeds,
                                  std::chrono::milliseconds timeout) {
  close();
  timeout_ = timeout;
  std::string errors;
  for (const redis_endpoint& seed : seeds) {
    credentials_ = seed;
    std::string why;
    redis_connection* c = node(seed.host, seed.port, why);
    if (c != nullptr) {
      why = read_slots(*c);
      if (why.empty()) {
        default_node_ = address_of(seed.host, seed.port);
        connected_ = true;
        return {};
      }
    }
    errors += (errors.empty() ? "" : "; ") + why;
  }
  close();
  return errors;
}

std::string redis_router::read_slots(redis_connection& via) {
  const redis_result r = via.command({"CLUSTER", "SLOTS"});
  if (!r.ok()) {
    if (r.io) return "CLUSTER SLOTS: " + r.error;
    cluster_ = false;  // "ERR This instance has cluster support disabled": standalone
    return {};
  }
  const auto* ranges = r.value.array();
  if (ranges == nullptr || ranges->empty()) return "CLUSTER SLOTS: no slots are served";
  std::vector<std::string> owners(slot_count);
  bool any = false;
  for (const redis_value& range : *ranges) {
    // A range that is not [first, last, [host, port, ...], ...] with 0 <= first <= last < 16384
    // and a port in 1..65535 is not a slot map entry: skipped, never indexed with.
    const auto* fields = range.array();
    if (fields == nullptr || fields->size() < 3) continue;
    const auto* first = (*fields)[0].integer();
    const auto* last = (*fields)[1].integer();
    const auto* master = (*fields)[2].array();
    if (first == nullptr || last == nullptr || master == nullptr || master->size() < 2) continue;
    if (*first < 0 || *first > *last || *last >= slot_count) continue;
    const auto* host = std::get_if<std::string>(&(*master)[0].v);
    const auto* port = (*master)[1].integer();
    if (host == nullptr || port == nullptr || *port < 1 || *port > 65535) continue;
    const std::string address =
        address_of(host->empty() ? credentials_.host : *host, static_cast<std::uint16_t>(*port));
    for (std::int64_t s = *first; s <= *last; ++s) {
      owners[static_cast<std::size_t>(s)] = address;
    }
    any = true;
  }
  if (!any) return "CLUSTER SLOTS: no valid slot range in the reply";
  slot_owner_ = std::move(owners);
  cluster_ = true;
  stale_map_ = false;
  return {};
}

redis_result redis_router::run_on(const std::string& address,
                                  const std::vector<std::string_view>& args, bool asking) {
  std::string host;
  std::uint16_t port = 0;
  redis_result out;
  if (!split_address(address, host, port)) {
    out.error = "bad node address " + address;
    out.io = true;
    return out;
  }
  redis_connection* c = node(host, port, out.error);
  if (c == nullptr) {
    out.io = true;
    return out;
  }
  if (asking) {
    const redis_result a = c->command({"ASKING"});
    if (!a.ok()) return a;
  }
  return c->command(args);
}

redis_result redis_router::command(std::string_view key,
                                   const std::vector<std::string_view>& args) {
  if (!connected_) return not_connected();
  redis_result out;
  if (cluster_ && stale_map_) {
    std::string why;
    if (redis_connection* c = node(credentials_.host, credentials_.port, why); c != nullptr) {
      read_slots(*c);
    }
  }
  std::string address = default_node_;
  if (cluster_) {
    const std::string& owner = slot_owner_[key_slot(key)];
    if (!owner.empty()) address = owner;
  }
  bool asking = false;
  // One redirection is followed; a second one in a row is reported (a MOVED storm falls back).
  for (int hop = 0; hop < 2; ++hop) {
    out = run_on(address, args, asking);
    out.node = address;
    if (out.io) {
      close();
      return out;
    }
    const bool moved = out.error.starts_with("MOVED ");
    if (!moved && !out.error.starts_with("ASK ")) return out;
    // "MOVED <slot> <host:port>" / "ASK <slot> <host:port>"
    const auto space = out.error.rfind(' ');
    address = out.error.substr(space + 1);
    asking = !moved;
    if (moved && cluster_) {  // a standalone server has no map (and should not redirect)
      slot_owner_[key_slot(key)] = address;
      stale_map_ = true;
    }
  }
  return out;
}

redis_result redis_router::command_at(const std::string& address,
                                      const std::vector<std::string_view>& args) {
  if (!connected_) return not_connected();
  redis_result out = run_on(address, args, false);
  out.node = address;
  if (out.io) close();
  return out;
}

}  // namespace floodgate::cluster::detail
