#include "cluster/tls_channel.hpp"

#include "cluster/socket_wait.hpp"

#include <hiredis/hiredis.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace floodgate::cluster::detail {

namespace {

/// OpenSSL's first queued error after `what`, and the queue cleared.
std::string openssl_error(const char* what) {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return what;
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return std::string(what) + ": " + text;
}

bool is_ip_literal(const std::string& host) {
  in_addr v4{};
  in6_addr v6{};
  return ::inet_pton(AF_INET, host.c_str(), &v4) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), &v6) == 1;
}

/** A TCP connection to `host`:`port` made within `timeout`, non-blocking (reads and writes wait
    in wait_ready, until the deadline of what they are part of). -1 and why on failure. */
int connect_tcp(const std::string& host, std::uint16_t port, std::chrono::milliseconds timeout,
                std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
      rc != 0) {
    why = ::gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    if (errno == EINPROGRESS) {
      const bool ready = wait_ready(fd, POLLOUT, std::chrono::steady_clock::now() + timeout);
      int error = 0;
      socklen_t length = sizeof error;
      if (ready && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0) {
        break;
      }
      why = !ready ? "timed out" : std::strerror(error != 0 ? error : errno);
    } else {
      why = std::strerror(errno);
    }
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(found);
  if (fd < 0) return -1;
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // latency only
  return fd;
}

/** Holds SIGPIPE back from this thread while it writes to a socket the server may have closed:
    the write fails with EPIPE instead of the signal ending the process, and a SIGPIPE the write
    raised is taken before the mask is restored (as libpq does). OpenSSL writes with write(2),
    where Asio and hiredis's sends are not involved. */
class sigpipe_held {
 public:
  sigpipe_held() noexcept {
    ::sigemptyset(&pipe_);
    ::sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    ::sigpending(&pending);
    was_pending_ = ::sigismember(&pending, SIGPIPE) == 1;
    ::pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~sigpipe_held() {
    const int saved = errno;
    sigset_t pending;
    ::sigpending(&pending);
    if (!was_pending_ && ::sigismember(&pending, SIGPIPE) == 1) {
      const timespec now{};
      while (::sigtimedwait(&pipe_, nullptr, &now) < 0 && errno == EINTR) {
      }
    }
    ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    errno = saved;
  }
  sigpipe_held(const sigpipe_held&) = delete;
  sigpipe_held& operator=(const sigpipe_held&) = delete;

 private:
  sigset_t pipe_{};
  sigset_t old_{};
  bool was_pending_ = false;
};

}  // namespace

tls_channel::~tls_channel() { close(); }

void tls_channel::close() noexcept {
  if (reader_ != nullptr) {
    redisReaderFree(reader_);
    reader_ = nullptr;
  }
  if (ssl_ != nullptr) {
    SSL_free(ssl_);  // no close_notify: the server may be gone, and Redis does not wait for it
    ssl_ = nullptr;
  }
  if (context_ != nullptr) {
    SSL_CTX_free(context_);
    context_ = nullptr;
  }
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

std::string tls_channel::load_files(const redis_endpoint& endpoint) {
  if (endpoint.tls_ca_file.empty()) {
    if (SSL_CTX_set_default_verify_paths(context_) != 1) return openssl_error("the trust store");
  } else if (SSL_CTX_load_verify_locations(context_, endpoint.tls_ca_file.c_str(), nullptr) != 1) {
    return openssl_error(("ssl_ca_certs " + endpoint.tls_ca_file).c_str());
  }
  if (endpoint.tls_cert_file.empty()) return {};
  const std::string& key =
      endpoint.tls_key_file.empty() ? endpoint.tls_cert_file : endpoint.tls_key_file;
  if (SSL_CTX_use_certificate_chain_file(context_, endpoint.tls_cert_file.c_str()) != 1) {
    return openssl_error(("ssl_certfile " + endpoint.tls_cert_file).c_str());
  }
  if (SSL_CTX_use_PrivateKey_file(context_, key.c_str(), SSL_FILETYPE_PEM) != 1) {
    return openssl_error(("ssl_keyfile " + key).c_str());
  }
  if (SSL_CTX_check_private_key(context_) != 1) {
    return openssl_error("ssl_keyfile does not match ssl_certfile");
  }
  return {};
}

std::string tls_channel::open(const redis_endpoint& endpoint, std::chrono::milliseconds timeout) {
  close();
  const std::string& host = endpoint.host;
  const std::string where = host + ":" + std::to_string(endpoint.port);
  std::string why;
  timeout_ = timeout;
  fd_ = connect_tcp(host, endpoint.port, timeout, why);
  if (fd_ < 0) return "connect to " + where + ": " + why;
  context_ = SSL_CTX_new(TLS_client_method());
  if (context_ == nullptr) {
    close();
    return openssl_error("TLS context");
  }
  SSL_CTX_set_min_proto_version(context_, TLS1_2_VERSION);
  SSL_CTX_set_verify(context_, SSL_VERIFY_PEER, nullptr);
  // An encrypted key must not make OpenSSL ask for a passphrase on the terminal (a wait with no
  // timeout): without one it fails to load, and says so.
  SSL_CTX_set_default_passwd_cb(context_, [](char*, int, int, void*) { return 0; });
  if (std::string error = load_files(endpoint); !error.empty()) {
    close();
    return error;
  }
  ssl_ = SSL_new(context_);
  if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1) {
    const std::string error = openssl_error("TLS session");
    close();
    return error;
  }
  // The certificate must name the host of the URL: its IP address, or its DNS name (sent as SNI).
  const bool named = is_ip_literal(host)
                         ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), host.c_str()) == 1
                         : SSL_set_tlsext_host_name(ssl_, host.c_str()) == 1 &&
                               SSL_set1_host(ssl_, host.c_str()) == 1;
  if (!named) {
    const std::string error = openssl_error("TLS host name");
    close();
    return error;
  }
  const sigpipe_held held;
  const auto until = std::chrono::steady_clock::now() + timeout;
  int connected = 0;
  next then = next::retry;
  do {
    ERR_clear_error();  // SSL_get_error reads the queue: only this call's errors may be on it
    connected = SSL_connect(ssl_);
  } while (connected != 1 && (then = after(connected, until)) == next::retry);
  if (connected != 1) {
    const long verified = SSL_get_verify_result(ssl_);
    const reply r = then == next::timed_out ? timed_out() : failure(connected, "handshake");
    std::string error = verified != X509_V_OK ? std::string("certificate verify failed: ") +
                                                    X509_verify_cert_error_string(verified)
                                              : r.error;
    ERR_clear_error();
    return "TLS with " + where + ": " + error;
  }
  reader_ = redisReaderCreate();
  if (reader_ == nullptr) {
    close();
    return "cannot allocate a Redis reply reader";
  }
  return {};
}

tls_channel::next tls_channel::after(int result,
                                     std::chrono::steady_clock::time_point until) noexcept {
  const int saved = errno;
  const int error = SSL_get_error(ssl_, result);
  if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
    const short events = error == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
    return wait_ready(fd_, events, until) ? next::retry : next::timed_out;
  }
  errno = saved;  // for failure(); a non-blocking socket's calls are not interrupted by signals
  return next::failed;
}

tls_channel::reply tls_channel::timed_out() {
  ERR_clear_error();
  close();
  return {nullptr, "timed out", true};
}

tls_channel::reply tls_channel::failure(int result, const char* doing) {
  const int saved = errno;
  reply r;
  switch (SSL_get_error(ssl_, result)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:  // after() waits for these until the deadline
      r.timeout = true;
      r.error = "timed out";
      break;
    case SSL_ERROR_ZERO_RETURN:
      r.error = "connection closed by the server";
      break;
    case SSL_ERROR_SYSCALL:
      r.timeout = saved == EAGAIN || saved == EWOULDBLOCK;
      r.error = r.timeout    ? std::string("timed out")
                : saved != 0 ? std::string(doing) + ": " + std::strerror(saved)
                             : std::string("connection lost");
      break;
    default:
      r.error = openssl_error(doing);
      break;
  }
  ERR_clear_error();
  close();
  return r;
}

tls_channel::reply tls_channel::round_trip(const char* command, std::size_t length) {
  if (ssl_ == nullptr) return {nullptr, "not connected", false};
  const sigpipe_held held;
  // One deadline for the command and its whole reply: a server that sends a byte now and then
  // is as slow as one that sends nothing.
  const auto until = std::chrono::steady_clock::now() + timeout_;
  for (std::size_t sent = 0; sent < length;) {
    std::size_t n = 0;
    ERR_clear_error();
    const int ok = SSL_write_ex(ssl_, command + sent, length - sent, &n);
    if (ok == 1) {
      sent += n;
      continue;
    }
    const next then = after(ok, until);
    if (then == next::retry) continue;
    return then == next::timed_out ? timed_out() : failure(ok, "write");
  }
  for (;;) {
    void* value = nullptr;
    if (redisReaderGetReply(reader_, &value) != REDIS_OK) {
      reply r{nullptr, std::string("protocol error: ") + reader_->errstr, false};
      close();
      return r;
    }
    if (value != nullptr) return {static_cast<redisReply*>(value), {}, false};
    char buffer[16 * 1024];
    std::size_t n = 0;
    ERR_clear_error();
    const int ok = SSL_read_ex(ssl_, buffer, sizeof buffer, &n);
    if (ok == 1) {
      redisReaderFeed(reader_, buffer, n);
      continue;
    }
    const next then = after(ok, until);
    if (then == next::retry) continue;
    return then == next::timed_out ? timed_out() : failure(ok, "read");
  }
}

}  // namespace floodgate::cluster::detail
