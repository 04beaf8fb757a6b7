// A real redis-server for tests: temp dir, random loopback port, always stopped.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace floodgate::cluster::testing {

/** One redis-server process started by a test. start() returns null with the reason when
    redis-server cannot run here (the test then skips, saying why). */
class redis_server {
 public:
  struct options {
    std::string password;          ///< requirepass, when not empty
    bool cluster_enabled = false;  ///< a node for a Redis Cluster (see start_cluster)
    /// Also serve TLS on tls_port(), with a self-signed certificate for IP 127.0.0.1 made by the
    /// openssl tool (certificate_file()); clients need no certificate of their own.
    bool tls = false;
    /// With tls: the server asks for a client certificate (`tls-auth-clients yes`, Redis's
    /// default) and trusts client_certificate_file().
    bool tls_client_auth = false;
  };

  static std::unique_ptr<redis_server> start(const options& o, std::string& why);
  ~redis_server();
  redis_server(const redis_server&) = delete;
  redis_server& operator=(const redis_server&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  /// `redis://127.0.0.1:PORT`.
  std::string url() const;
  /// With options::tls: the TLS port, `rediss://127.0.0.1:TLS_PORT`, and the certificate (PEM)
  /// a client must trust.
  std::uint16_t tls_port() const noexcept { return tls_port_; }
  std::string tls_url() const;
  std::string certificate_file() const { return (dir_ / "cert.pem").string(); }
  /// With options::tls_client_auth: a client certificate the server accepts, and its key.
  std::string client_certificate_file() const { return (dir_ / "client.pem").string(); }
  std::string client_key_file() const { return (dir_ / "client-key.pem").string(); }
  /// The same key encrypted with a passphrase ("secret").
  std::string encrypted_client_key_file() const {
    return (dir_ / "client-key-encrypted.pem").string();
  }

  /// SIGKILL and reap.
  void kill();
  /// SIGSTOP / SIGCONT: a server that accepts connections but never answers.
  void pause();
  void resume();
  /// Starts again on the same port, empty. False when it did not come up.
  bool restart();

  /// Sends one command (AUTH first when a password is set) and returns the first reply line.
  std::string command(const std::vector<std::string>& args) const;

 private:
  redis_server() = default;
  bool launch(std::string& why);

  options options_;
  std::filesystem::path dir_;
  std::uint16_t port_ = 0;
  std::uint16_t tls_port_ = 0;
  pid_t pid_ = -1;
};

/** Three masters (each with `replicas` replicas) joined into a Redis Cluster with
    `redis-cli --cluster create`; empty with the reason when that fails. */
std::vector<std::unique_ptr<redis_server>> start_cluster(std::string& why, int replicas = 0);

/// A free loopback TCP port, found by binding port 0.
std::uint16_t free_port();

}  // namespace floodgate::cluster::testing
