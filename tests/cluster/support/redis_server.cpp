#include "cluster/support/redis_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace floodgate::cluster::testing {

namespace {

int connect_loopback(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string encode(const std::vector<std::string>& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return out;
}

/// The first line of a reply (enough for +OK, -ERR, :n), waiting at most `ms`.
std::string read_line(int fd, int ms) {
  std::string got;
  while (got.find("\r\n") == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, ms) <= 0) break;
    char buf[512];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got.substr(0, got.find("\r\n"));
}

/// A bulk-string reply's text (`$N` then N bytes), or the first line of any other reply.
std::string read_reply(int fd, int ms) {
  std::string got;
  for (;;) {
    const auto eol = got.find("\r\n");
    if (eol != std::string::npos) {
      if (!got.starts_with("$")) return got.substr(0, eol);
      const long n = std::strtol(got.c_str() + 1, nullptr, 10);
      if (n < 0) return "";
      if (got.size() >= eol + 2 + static_cast<std::size_t>(n)) {
        return got.substr(eol + 2, static_cast<std::size_t>(n));
      }
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, ms) <= 0) return got;
    char buf[4096];
    const ssize_t k = ::read(fd, buf, sizeof buf);
    if (k <= 0) return got;
    got.append(buf, static_cast<std::size_t>(k));
  }
}

}  // namespace

namespace {

/// Binds a loopback socket to `port` (0: any free one) and closes it; returns the port bound,
/// or 0 if the port is taken.
std::uint16_t bind_loopback(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  std::uint16_t bound = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    bound = ntohs(a.sin_port);
  }
  ::close(fd);
  return bound;
}

/// Redis Cluster's bus listens on the client port + 10 000.
constexpr int cluster_bus_offset = 10'000;

/** A free port whose cluster bus port is free too. An ephemeral port above 55 535 has no bus
    port at all, and redis-server refuses it at once; picked at random, three such ports in a
    row were what made a cluster test skip now and then. */
std::uint16_t free_cluster_port() {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::uint16_t port = bind_loopback(0);
    if (port != 0 && port + cluster_bus_offset <= 65'535 &&
        bind_loopback(static_cast<std::uint16_t>(port + cluster_bus_offset)) != 0) {
      return port;
    }
  }
  return bind_loopback(0);
}

}  // namespace

std::uint16_t free_port() { return bind_loopback(0); }

std::unique_ptr<redis_server> redis_server::start(const options& o, std::string& why) {
  std::unique_ptr<redis_server> s(new redis_server());
  s->options_ = o;
  std::string pattern =
      (std::filesystem::temp_directory_path() / "floodgate-redis-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    why = "cannot make a temporary directory";
    return nullptr;
  }
  s->dir_ = pattern;
  if (o.tls) {
    const std::string make_certificate =
        "cd '" + s->dir_.string() +
        "' && openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 1"
        " -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1";
    const std::string make_client_certificate =
        "cd '" + s->dir_.string() +
        "' && openssl req -x509 -newkey rsa:2048 -nodes -keyout client-key.pem -out client.pem"
        " -days 1 -subj /CN=floodgate-test-client >/dev/null 2>&1 && cat cert.pem client.pem >"
        " trusted.pem && openssl pkey -in client-key.pem -aes256 -passout pass:secret"
        " -out client-key-encrypted.pem >/dev/null 2>&1";
    if (std::system(make_certificate.c_str()) != 0 ||
        std::system(make_client_certificate.c_str()) != 0) {
      why = "openssl could not make a test certificate (scripts/setup-deps installs openssl)";
      return nullptr;
    }
  }
  for (int attempt = 0; attempt < 3; ++attempt) {
    s->port_ = o.cluster_enabled ? free_cluster_port() : free_port();
    if (o.tls) s->tls_port_ = free_port();
    if (s->launch(why)) return s;
  }
  return nullptr;
}

bool redis_server::launch(std::string& why) {
  const std::string port = std::to_string(port_);
  const std::string dir = dir_.string();
  const std::string log = (dir_ / "redis.log").string();
  std::vector<std::string> args = {"redis-server", "--port", port, "--bind", "127.0.0.1"};
  // With TLS, a second loopback address too: one the certificate (for 127.0.0.1) does not name.
  if (options_.tls) args.emplace_back("127.0.0.2");
  args.insert(args.end(), {"--dir", dir, "--save", "", "--appendonly", "no", "--logfile", log,
                           "--enable-debug-command", "local"});
  if (!options_.password.empty()) {
    args.push_back("--requirepass");
    args.push_back(options_.password);
  }
  if (options_.tls) {
    const std::string cert = certificate_file();
    const std::string key = (dir_ / "key.pem").string();
    for (const std::string& a :
         {std::string("--tls-port"), std::to_string(tls_port_), std::string("--tls-cert-file"),
          cert, std::string("--tls-key-file"), key, std::string("--tls-ca-cert-file"),
          (dir_ / "trusted.pem").string(), std::string("--tls-auth-clients"),
          std::string(options_.tls_client_auth ? "yes" : "no")}) {
      args.push_back(a);
    }
  }
  if (options_.cluster_enabled) {
    for (const char* a : {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                          "--cluster-node-timeout", "2000"}) {
      args.emplace_back(a);
    }
  }
  pid_ = ::fork();
  if (pid_ == 0) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp("redis-server", argv.data());
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      why = "redis-server could not start (exit status " + std::to_string(WEXITSTATUS(status)) +
            "; is it installed? scripts/setup-deps installs it)";
      return false;
    }
    if (const int fd = connect_loopback(port_); fd >= 0) {
      ::close(fd);
      const std::string pong = command({"PING"});
      if (pong == "+PONG" || pong.starts_with("-NOAUTH") || !options_.password.empty()) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill();
  why = "redis-server did not answer within 5 s";
  return false;
}

redis_server::~redis_server() {
  resume();
  kill();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string redis_server::url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
std::string redis_server::tls_url() const {
  return "rediss://127.0.0.1:" + std::to_string(tls_port_);
}

void redis_server::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void redis_server::pause() {
  if (pid_ > 0) ::kill(pid_, SIGSTOP);
}
void redis_server::resume() {
  if (pid_ > 0) ::kill(pid_, SIGCONT);
}

bool redis_server::restart() {
  kill();
  std::string why;
  return launch(why);
}

std::vector<std::unique_ptr<redis_server>> start_cluster(std::string& why, int replicas) {
  std::vector<std::unique_ptr<redis_server>> nodes;
  std::string create = "redis-cli --cluster create";
  for (int i = 0; i < 3 * (1 + replicas); ++i) {
    auto n = redis_server::start({.cluster_enabled = true}, why);
    if (!n) return {};
    create += " 127.0.0.1:" + std::to_string(n->port());
    nodes.push_back(std::move(n));
  }
  create += " --cluster-replicas " + std::to_string(replicas) + " --cluster-yes >/dev/null 2>&1";
  if (std::system(create.c_str()) != 0) {
    why = "redis-cli --cluster create failed";
    return {};
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    bool ok = true;
    for (const auto& n : nodes) {
      // Every node sees the cluster up, and every replica has synced with its master (a replica
      // that never synced refuses to fail over).
      const std::string info = n->command({"CLUSTER", "INFO"});
      const std::string replication = n->command({"INFO", "replication"});
      ok = ok && info.find("cluster_state:ok") != std::string::npos &&
           (replication.find("role:master") != std::string::npos ||
            replication.find("master_link_status:up") != std::string::npos);
    }
    if (ok) return nodes;
    if (std::chrono::steady_clock::now() > deadline) {
      why = "the Redis Cluster did not become ready within 10 s";
      return {};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string redis_server::command(const std::vector<std::string>& args) const {
  const int fd = connect_loopback(port_);
  if (fd < 0) return "";
  std::string out;
  if (!options_.password.empty()) {
    const std::string auth = encode({"AUTH", options_.password});
    if (::write(fd, auth.data(), auth.size()) < 0) return "";
    read_line(fd, 2000);
  }
  const std::string req = encode(args);
  if (::write(fd, req.data(), req.size()) >= 0) out = read_reply(fd, 2000);
  ::close(fd);
  return out;
}

}  // namespace floodgate::cluster::testing
