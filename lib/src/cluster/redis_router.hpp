// Standalone Redis or Redis Cluster behind one call: commands go to the node owning their key.
#pragma once

#include "cluster/redis_connection.hpp"

#include <floodgate/rules/cluster_config.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace floodgate::cluster::detail {

/** Routes keyed commands. On connect it asks the first reachable seed for `CLUSTER SLOTS`: a
    standalone server (cluster support disabled) gets every command; in a Redis Cluster each key
    goes to the master of its slot (CRC16 of the hash tag), `MOVED` updates the map and retries
    there (the map is re-read on the next call), `ASK` retries once on the named node after
    `ASKING`. Connections to nodes are opened on first use with the seed's credentials.

    Any connection failure closes everything: the caller falls back and reconnects later, which
    re-reads the slot map (how a failover is picked up). Not thread-safe: one owner thread. */
class redis_router {
 public:
  /// Connects to the first seed that answers. Empty string on success, else every reason.
  std::string connect(const std::vector<redis_endpoint>& seeds, std::chrono::milliseconds timeout);
  bool connected() const noexcept { return connected_; }
  void close() noexcept;
  /// Whether the server is a Redis Cluster.
  bool is_cluster() const noexcept { return cluster_; }
  /// Runs `args` on the node that owns `key`.
  redis_result command(std::string_view key, const std::vector<std::string_view>& args);
  /** Runs `args` on the node `address` ("host:port", as redis_result::node names it): for a
      command without a key that must reach one node, such as SCRIPT LOAD on the node that
      answered NOSCRIPT (during a slot migration, the ASK target rather than the key's owner). */
  redis_result command_at(const std::string& address, const std::vector<std::string_view>& args);

 private:
  redis_connection* node(const std::string& host, std::uint16_t port, std::string& why);
  std::string read_slots(redis_connection& via);
  redis_result run_on(const std::string& address, const std::vector<std::string_view>& args,
                      bool asking);
  static bool split_address(std::string_view text, std::string& host, std::uint16_t& port);

  std::map<std::string, std::unique_ptr<redis_connection>> nodes_;  // "host:port" → connection
  std::vector<std::string> slot_owner_;                              // slot → "host:port"
  std::string default_node_;
  redis_endpoint credentials_;
  std::chrono::milliseconds timeout_{20};
  bool connected_ = false;
  bool cluster_ = false;
  bool stale_map_ = false;
};

}  // namespace floodgate::cluster::detail
