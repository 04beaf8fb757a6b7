// The `cluster:` section of a rule file: where clusterMode flow rules keep their shared windows.
#pragma once

#include <floodgate/rules/rule_error.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace floodgate {

/** Shared state for clusterMode flow rules (SPEC §10). Plain value: a reload that changes it makes
    the Redis adapter reconnect; rules that did not change keep their local state. */
struct cluster_config {
  /// `redis://[[user]:password@]host[:port][/db]` (or `rediss://` for TLS) URLs. Empty: the
  /// adapter's default endpoint (the demo's `--redis`). Several URLs are seed nodes of one
  /// deployment, tried in turn.
  std::vector<std::string> redis;
  std::string name_space = "floodgate";  ///< `namespace`: key prefix, so services never collide
  std::int32_t timeout_ms = 20;          ///< a lease request slower than this is a failure

  friend bool operator==(const cluster_config&, const cluster_config&) = default;
};

/// One Redis endpoint, parsed from a URL.
struct redis_endpoint {
  std::string host;
  std::uint16_t port = 6379;
  std::string user;      ///< Redis 6 ACL user; empty with a password means `AUTH password`
  std::string password;  ///< empty: no AUTH
  std::int32_t db = 0;
  bool tls = false;  ///< `rediss://`: TLS, the server's certificate verified (tls_channel)
  /// rediss:// query parameters, named as redis-py names them: `ssl_ca_certs` (PEM file of the
  /// CAs to trust instead of the system's), `ssl_certfile` and `ssl_keyfile` (a client
  /// certificate and its key, for servers with `tls-auth-clients yes`; the key may sit in the
  /// certificate's file).
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;

  friend bool operator==(const redis_endpoint&, const redis_endpoint&) = default;
};

/** Parses `redis://[[user]:password@]host[:port][/db]`, or
    `rediss://...[?ssl_ca_certs=F&ssl_certfile=F&ssl_keyfile=F]` for TLS. On failure returns
    nothing and sets `error`. */
std::optional<redis_endpoint> parse_redis_url(std::string_view url, std::string& error);

/** The URL with its password, if any, written `***` (`rediss://user:***@host:6380`): what the
    admin API shows. Scheme, user, host and parameters stay as written. */
std::string without_password(std::string_view url);

/// Checks `config`, appending problems with paths under `cluster`.
void validate(const cluster_config& config, std::vector<rule_error>& errors);

}  // namespace floodgate
