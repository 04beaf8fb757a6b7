// A TLS connection to a Redis server (rediss://): OpenSSL carries the bytes, hiredis
// encodes the commands and parses the replies.
#pragma once

#include <floodgate/rules/cluster_config.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

struct ssl_st;
struct ssl_ctx_st;
struct redisReader;
struct redisReply;

namespace floodgate::cluster::detail {

/** What hiredis 0.14 (Debian 12) cannot do itself: TLS. The socket is connected and the handshake
    made here; a command is hiredis's RESP encoding written through the TLS session, and its reply
    is fed to a hiredis reader, so no RESP is parsed by hand.

    The server's certificate is verified against the URL's `ssl_ca_certs` file, else OpenSSL's
    default trust store (the system's; the environment variables SSL_CERT_FILE and SSL_CERT_DIR
    name others), and its DNS name or IP address against the host of the URL. A client
    certificate is sent when the URL names one (`ssl_certfile`, `ssl_keyfile`).

    Not thread-safe: one owner thread (the adapter's). */
class tls_channel {
 public:
  tls_channel() noexcept = default;
  ~tls_channel();
  tls_channel(const tls_channel&) = delete;
  tls_channel& operator=(const tls_channel&) = delete;

  /** Connects to the endpoint's host and port and completes the TLS handshake. Each connect
      attempt (one per address the host resolves to) waits at most `timeout`, the handshake at
      most `timeout` in all, and so does each later command, its reply included, however the
      server spreads its bytes; name resolution is the system's. Empty on success, else what
      failed. */
  std::string open(const redis_endpoint& endpoint, std::chrono::milliseconds timeout);
  bool is_open() const noexcept { return ssl_ != nullptr; }
  void close() noexcept;

  /// A reply (owned by the caller: freeReplyObject), or why there is none.
  struct reply {
    redisReply* value = nullptr;
    std::string error;
    bool timeout = false;
  };
  /// Writes one encoded command and reads its reply. After an error the channel is closed.
  reply round_trip(const char* command, std::size_t length);

 private:
  reply failure(int result, const char* doing);
  /// After an SSL call failed with `result`: retry it (the socket is ready for what it wants),
  /// the deadline passed, or it failed (failure() says why).
  enum class next { retry, timed_out, failed };
  next after(int result, std::chrono::steady_clock::time_point until) noexcept;
  reply timed_out();
  /// The context's trust store and client certificate, as the endpoint names them.
  std::string load_files(const redis_endpoint& endpoint);

  int fd_ = -1;
  ssl_ctx_st* context_ = nullptr;
  ssl_st* ssl_ = nullptr;
  redisReader* reader_ = nullptr;
  std::chrono::milliseconds timeout_{0};  ///< of each command, its reply included
};

}  // namespace floodgate::cluster::detail
