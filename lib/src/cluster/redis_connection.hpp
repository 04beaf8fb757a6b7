// One blocking connection to a Redis server (hiredis), used only from the adapter's own thread.
#pragma once

#include <floodgate/rules/cluster_config.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

struct redisContext;
struct redisReply;

namespace floodgate::cluster::detail {

class tls_channel;

/// A reply: an integer, a string (bulk or status), an array of replies, or nil.
struct redis_value {
  std::variant<std::monostate, std::int64_t, std::string, std::vector<redis_value>> v;

  const std::int64_t* integer() const noexcept { return std::get_if<std::int64_t>(&v); }
  const std::vector<redis_value>* array() const noexcept {
    return std::get_if<std::vector<redis_value>>(&v);
  }
};

/// What a command gave: a value, or an error. `io` errors (timeout, reset, refused) mean the
/// connection is unusable; an error reply (`-ERR ...`) leaves it usable.
struct redis_result {
  redis_value value;
  std::string error;  ///< empty: ok
  bool io = false;    ///< the error is the connection's, not a reply
  bool timeout = false;
  std::string node;  ///< redis_router's: the node ("host:port") that gave this reply

  bool ok() const noexcept { return error.empty(); }
};

/** A hiredis synchronous context with connect and command timeouts, or for a `rediss://`
    endpoint a TLS channel (tls_channel.hpp) that hiredis encodes and parses for. Parsing is
    hiredis's either way (no hand-written RESP). Not thread-safe: one owner thread. */
class redis_connection {
 public:
  redis_connection() noexcept;
  ~redis_connection();
  redis_connection(const redis_connection&) = delete;
  redis_connection& operator=(const redis_connection&) = delete;

  /** Connects to `endpoint`, authenticates and selects its database, each step bounded by
      `timeout`. Returns an empty string on success, else what went wrong. */
  std::string connect(const redis_endpoint& endpoint, std::chrono::milliseconds timeout);
  bool connected() const noexcept;
  void close() noexcept;

  /// Sends one command and waits for its whole reply, all within the timeout.
  redis_result command(const std::vector<std::string_view>& args);

 private:
  /// One command's reply over the plain context or the TLS channel; null with `out`'s error set
  /// when there is none (`out.io`: the connection is broken).
  redisReply* plain_round_trip(std::vector<const char*>& argv,
                               const std::vector<std::size_t>& lengths, redis_result& out);
  redisReply* tls_round_trip(std::vector<const char*>& argv,
                             const std::vector<std::size_t>& lengths, redis_result& out);

  std::chrono::milliseconds timeout_{0};  ///< of each command, its reply included
  redisContext* context_ = nullptr;
  std::unique_ptr<tls_channel> tls_;  ///< set while a rediss:// endpoint is connected
};

}  // namespace floodgate::cluster::detail
