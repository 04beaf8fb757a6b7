// The dashboard on the demo's admin port: the page, the event stream and bad input (SPEC §11).
#include "demo_fixture.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <memory>
#include <string>
#include <vector>

namespace floodgate::test {
namespace {

using namespace std::chrono_literals;

constexpr const char* rules = R"(
flow:
  - resource: "GET:/hello"
    count: 1000
)";

/// A raw connection reading an event stream (receive timeout 10 s: a test fails, never hangs).
class stream_client {
 public:
  explicit stream_client(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    const std::string req = "GET /floodgate/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    connected_ = connected_ && ::send(fd_, req.data(), req.size(), MSG_NOSIGNAL) ==
                                   static_cast<ssize_t>(req.size());
  }
  ~stream_client() { ::close(fd_); }
  stream_client(const stream_client&) = delete;
  stream_client& operator=(const stream_client&) = delete;

  /// Reads until `needle` was received; false on close or timeout.
  bool read_until(std::string_view needle) {
    while (text.find(needle) == std::string::npos) {
      char buf[16384];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return false;
      text.append(buf, static_cast<std::size_t>(n));
    }
    return true;
  }
  /// True when the server closes the connection within the receive timeout.
  bool closed_by_peer() {
    for (;;) {
      char buf[16384];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
      text.append(buf, static_cast<std::size_t>(n));
    }
  }
  void close() { ::shutdown(fd_, SHUT_RDWR); }

  bool connected_ = false;
  std::string text;

 private:
  int fd_;
};

TEST_F(DemoTest, AdminRootServesTheDashboardPage) {
  start(rules);
  const http_response r = http_get(demo_->admin_port(), "/");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.header("content-type"), "text/html; charset=utf-8");
  EXPECT_NE(r.body.find("<title>floodgate</title>"), std::string::npos);
  EXPECT_NE(r.header("content-security-policy").find("default-src 'none'"), std::string::npos);
  // The main port is the application's: no dashboard there.
  EXPECT_EQ(get("/").status, 404u);
}

TEST_F(DemoTest, StreamSendsTheHistoryThenOneSnapshotASecond) {
  start(rules);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(get("/hello").status, 200u);
  stream_client c{demo_->admin_port()};
  ASSERT_TRUE(c.connected_);
  ASSERT_TRUE(c.read_until("\r\n\r\n"));
  EXPECT_EQ(c.text.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << c.text;
  EXPECT_NE(c.text.find("Content-Type: text/event-stream\r\n"), std::string::npos);
  // The snapshot taken after the requests names the resource.
  ASSERT_TRUE(c.read_until(R"(data: {"t":)"));
  ASSERT_TRUE(c.read_until(R"(["GET:/hello",)")) << c.text;
  ASSERT_TRUE(c.read_until("\"breakers\":"));
  ASSERT_TRUE(c.read_until(R"("reload":{"file":)"));
}

TEST_F(DemoTest, SixteenStreamSubscribersAtMostTheNextGets503) {
  start(rules);
  std::vector<std::unique_ptr<stream_client>> clients;
  for (int i = 0; i < 16; ++i) {
    clients.push_back(std::make_unique<stream_client>(demo_->admin_port()));
    ASSERT_TRUE(clients.back()->read_until("data: ")) << i;
    EXPECT_EQ(clients.back()->text.rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  }
  stream_client refused{demo_->admin_port()};
  ASSERT_TRUE(refused.read_until("too many stream subscribers")) << refused.text;
  EXPECT_EQ(refused.text.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << refused.text;
  EXPECT_TRUE(refused.closed_by_peer());
  // The admin API still answers while the stream is full.
  EXPECT_EQ(http_get(demo_->admin_port(), "/floodgate/resources").status, 200u);

  // A subscriber that leaves frees its place.
  clients.front()->close();
  EXPECT_TRUE(eventually(
      [&] {
        stream_client again{demo_->admin_port()};
        return again.read_until("\r\n\r\n") && again.text.rfind("HTTP/1.1 200 OK", 0) == 0;
      },
      5s));
}

TEST_F(DemoTest, BadAdminInputIs404OrAnEmptyAnswer) {
  start(rules);
  for (const char* path : {"/nope", "/floodgate/streams", "/floodgate/stream/x", "/index.html",
                           "/floodgate/resources/GET:/hello"}) {
    const http_response r = http_get(demo_->admin_port(), path);
    EXPECT_EQ(r.status, 404u) << path;
    EXPECT_EQ(r.header("content-type"), "application/json") << path;
  }
  const http_response unknown =
      http_get(demo_->admin_port(), "/floodgate/origins?resource=%3Cimg%20src%3Dx%3E");
  EXPECT_EQ(unknown.status, 200u);
  EXPECT_EQ(unknown.body, "[]");
}

// The stream is GET only, like every admin endpoint: other methods are 405 with Allow, not 404.
TEST_F(DemoTest, OtherMethodsOnTheStreamAre405) {
  start(rules);
  for (const char* method : {"POST", "DELETE", "OPTIONS"}) {
    http_connection c{demo_->admin_port()};
    c.send_raw(std::string(method) +
               " /floodgate/stream HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
    const http_response r = c.read_response();
    EXPECT_EQ(r.status, 405u) << method;
    EXPECT_EQ(r.header("allow"), "GET") << method;
  }
}

TEST_F(DemoTest, SigtermWithStreamSubscribersExitsPromptly) {
  start(rules, {"--drain-timeout-ms", "600000"});  // streams are closed, not drained
  stream_client a{demo_->admin_port()};
  stream_client b{demo_->admin_port()};
  ASSERT_TRUE(a.read_until("data: "));
  ASSERT_TRUE(b.read_until("data: "));
  demo_->signal(SIGTERM);
  EXPECT_TRUE(a.closed_by_peer());
  EXPECT_EQ(demo_->wait(10s), 0);
}

}  // namespace
}  // namespace floodgate::test
