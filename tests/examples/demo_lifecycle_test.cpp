// The real demo's start-up, flags, malformed requests, disconnects and graceful shutdown.
#include "demo_fixture.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

namespace floodgate::test {
namespace {

using namespace std::chrono_literals;

TEST_F(DemoTest, PrintsWhereItListensWithTheBoundPorts) {
  start("{}");
  EXPECT_NE(demo_->port(), 0);
  EXPECT_NE(demo_->admin_port(), 0);
  EXPECT_EQ(demo_->out(), "listening on http://127.0.0.1:" + std::to_string(demo_->port()) +
                              "\nadmin on http://127.0.0.1:" + std::to_string(demo_->admin_port()) +
                              "\n");
}

TEST_F(DemoTest, BadRulesFileExitsWithCode2AndTheError) {
  rules_dir bad{"flow:\n  - resource: \"GET:/hello\"\n    count: -1\n"};
  const demo_result r = run_demo({"--rules", bad.path()}, 30s);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("rules.yaml:3:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("flow[0].count"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("listening on"), std::string::npos);

  EXPECT_EQ(run_demo({"--rules", bad.path() + ".missing"}, 30s).exit_code, 2);
  rules_dir empty{""};
  EXPECT_EQ(run_demo({"--rules", empty.path()}, 30s).exit_code, 2);
}

TEST_F(DemoTest, EveryStartUpRuleErrorIsAFileLineColumnLine) {
  rules_dir syntax{"flow:\n  - resource: [\n"};
  const demo_result broken = run_demo({"--rules", syntax.path()}, 30s);
  EXPECT_EQ(broken.exit_code, 2);
  EXPECT_EQ(broken.err.rfind(syntax.path() + ":3:1: (file): YAML syntax error: ", 0), 0u) << broken.err;

  const std::string missing = syntax.path() + ".missing";
  const demo_result absent = run_demo({"--rules", missing}, 30s);
  EXPECT_EQ(absent.exit_code, 2);
  EXPECT_EQ(absent.err, missing + ":1:1: (file): cannot open: No such file or directory\n");
}

TEST_F(DemoTest, UnknownFlagsAreRejected) {
  const demo_result r = run_demo({"--bogus"}, 30s);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("usage"), std::string::npos);
  EXPECT_EQ(r.err.rfind("floodgate-demo: --bogus: unknown flag\n", 0), 0u) << r.err;
  EXPECT_EQ(run_demo({"--bogus=1"}, 30s).err.rfind("floodgate-demo: --bogus: unknown flag\n", 0),
            0u);
  const demo_result no_value =
      run_demo({"--port", "0", "--admin-port", "0", "--origin-header"}, 30s);
  EXPECT_EQ(no_value.exit_code, 2);
  EXPECT_EQ(no_value.err.rfind("floodgate-demo: --origin-header: needs a value\n", 0), 0u)
      << no_value.err;
  // An audit: `--rules ""` (an unset variable) started with examples/rules.yaml instead.
  const demo_result no_file = run_demo({"--port", "0", "--admin-port", "0", "--rules", ""}, 30s);
  EXPECT_EQ(no_file.exit_code, 2);
  EXPECT_EQ(no_file.err.rfind("floodgate-demo: --rules: needs a file, not ''\n", 0), 0u)
      << no_file.err;
  // A listen address is an IP address: a name used to fail at bind, exit 1, "Invalid argument".
  const demo_result name = run_demo({"--port", "0", "--admin-port", "0", "--address", "localhost"}, 30s);
  EXPECT_EQ(name.exit_code, 2);
  EXPECT_EQ(name.err.rfind("floodgate-demo: --address: not an IP address: localhost\n", 0), 0u)
      << name.err;
}

// A name no request can carry (a space, a colon) would turn every origin-specific rule off
// without a word: it is a usage error like any other bad value. (Empty says: read no origin.)
TEST_F(DemoTest, AnOriginHeaderThatIsNoFieldNameIsRejected) {
  for (const std::string bad : {"X Origin", "X-Origin:", "X-Ori\tgin"}) {
    const demo_result r =
        run_demo({"--port", "0", "--admin-port", "0", "--origin-header", bad}, 30s);
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_EQ(r.err.rfind("floodgate-demo: --origin-header: not a header field name: '" + bad +
                              "'\n",
                          0),
              0u)
        << r.err;
  }
}

// The demo listens twice; a port in use names the address it could not take, for either.
TEST_F(DemoTest, APortInUseIsNamedInTheError) {
  struct socket_fd {
    int fd;
    ~socket_fd() {
      if (fd >= 0) ::close(fd);
    }
  } socket{::socket(AF_INET, SOCK_STREAM, 0)};
  const int held = socket.fd;
  ASSERT_GE(held, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(held, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(::listen(held, 1), 0);
  ASSERT_EQ(::getsockname(held, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  rules_dir rules{"{}"};
  const demo_result main =
      run_demo({"--rules", rules.path(), "--port", port, "--admin-port", "0"}, 30s);
  EXPECT_EQ(main.exit_code, 1);
  EXPECT_EQ(main.err, "floodgate-demo: cannot listen on 127.0.0.1:" + port +
                          " (bind): Address already in use\n");
  const demo_result admin =
      run_demo({"--rules", rules.path(), "--port", "0", "--admin-port", port}, 30s);
  EXPECT_EQ(admin.exit_code, 1);
  EXPECT_EQ(admin.err, "floodgate-demo: cannot listen on 127.0.0.1:" + port +
                           " (bind): Address already in use\n");
}

TEST_F(DemoTest, NoGuardServesTheSameEndpointsWithoutTheMiddleware) {
  start(R"(flow: [{resource: "GET:/hello", count: 0}])", {"--no-guard"});
  for (int i = 0; i < 5; ++i) EXPECT_EQ(get("/hello").status, 200u);
  EXPECT_EQ(get("/work?ms=1").status, 200u);
  EXPECT_EQ(get("/nope").status, 404u);
  EXPECT_TRUE(admin_json("/floodgate/resources").as_array().empty());
}

// An audit: `/users/%342` answered `{"id":"%342"}` while its hot key and paramFlow value was
// `42`; the endpoints read their path parameters decoded, as the guard does.
TEST_F(DemoTest, EndpointsReadTheirPathParametersPercentDecoded) {
  start("{}");
  for (const bool guarded : {true, false}) {
    if (!guarded) start("{}", {"--no-guard"});
    EXPECT_EQ(get("/users/%342").body, R"({"id":"42"})");
    EXPECT_EQ(get("/users/a+b%2Fc").body, R"({"id":"a+b/c"})");
    EXPECT_EQ(get("/users/%E2%82%AC").body, "{\"id\":\"\u20ac\"}");
    EXPECT_EQ(get("/users/%zz").body, R"({"id":"%zz"})");  // a malformed escape is kept
    const http_response status = get("/status/%32%30%34");
    EXPECT_EQ(status.status, 204u);
  }
}

TEST_F(DemoTest, MalformedRequestsAreRefusedWithoutTouchingStatistics) {
  start("{}");
  const auto refused = [&](const std::string& bytes) {
    http_connection c{demo_->port()};
    c.send_raw(bytes);
    return c.read_response();
  };
  const http_response garbage = refused("GARBAGE\r\n\r\n");
  EXPECT_TRUE(garbage.status == 0 || garbage.status == 400) << garbage.status;
  const http_response version = refused("GET /hello HTTP/7.0\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(version.status == 0 || version.status == 400) << version.status;
  EXPECT_EQ(refused("GET /hello HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n").status, 400u);
  // RFC 9112 section 3.2: an HTTP/1.1 request must name its host, once.
  EXPECT_EQ(refused("GET /hello HTTP/1.1\r\nConnection: close\r\n\r\n").status, 400u);
  EXPECT_EQ(refused("GET /hello HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n").status, 400u);
  // ... whose value is a host (an audit: these were served and counted in `GET:/hello`).
  for (const char* host : {"a b", "a/b", "x@y", "[::1", "[]", "a\tb", "h:8o", "a%2", "a%zz"}) {
    EXPECT_EQ(refused("GET /hello HTTP/1.1\r\nHost: " + std::string(host) + "\r\n\r\n").status,
              400u)
        << host;
  }
  // A request-target of none of section 3.2's forms (these were counted in `<unmatched>`).
  for (const char* line : {"GET hello", "GET *", "GET :x", "GET 1a:b", "CONNECT x", "CONNECT /x"}) {
    EXPECT_EQ(refused(std::string(line) + " HTTP/1.1\r\nHost: x\r\n\r\n").status, 400u) << line;
  }
  EXPECT_EQ(
      refused("GET /hello HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(9000, 'a') + "\r\n\r\n")
          .status,
      431u);
  EXPECT_EQ(refused("POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n").status,
            413u);
  EXPECT_TRUE(admin_json("/floodgate/resources").as_array().empty());
  EXPECT_EQ(sample(metrics(), "floodgate_resources"), 0.0);
  // Just under the limits is fine, and HTTP/1.0 did not require Host.
  EXPECT_EQ(get("/hello", {{"X-Big", std::string(7000, 'a')}}).status, 200u);
  EXPECT_EQ(refused("GET /hello HTTP/1.0\r\n\r\n").status, 200u);
  // Every form of a host, and of a target, that RFC 9112 allows is served.
  for (const char* host :
       {"", "example.com:80", "127.0.0.1", "[::1]:8080", "[v1.x]", "a%41-b_~!$&'()*+,;=:"}) {
    EXPECT_EQ(refused("GET /hello HTTP/1.1\r\nHost: " + std::string(host) + "\r\n\r\n").status,
              200u)
        << host;
  }
  EXPECT_EQ(refused("GET http://x/hello HTTP/1.1\r\nHost: x\r\n\r\n").status, 200u);
  EXPECT_EQ(refused("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n").status, 404u);
  EXPECT_EQ(refused("CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n").status, 404u);
  EXPECT_EQ(refused("CONNECT [::1]:443 HTTP/1.1\r\nHost: x\r\n\r\n").status, 404u);
}

// A response to HEAD has no body: one that carried one was read by a keep-alive client as the
// start of its next response. The main port serves GET routes only, so HEAD is "anything else"
// (SPEC §5): 404 in `<unmatched>`; the admin port answers 405 with `Allow: GET`.
TEST_F(DemoTest, HeadIsAnsweredWithoutABodyAndTheConnectionServesTheNextRequest) {
  start("{}");
  const std::string heads = "HEAD /hello HTTP/1.1\r\nHost: x\r\n\r\n"
                            "HEAD /floodgate/rules HTTP/1.1\r\nHost: x\r\n\r\n"
                            "HEAD /floodgate/stream HTTP/1.1\r\nHost: x\r\n\r\n"
                            "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  for (const std::uint16_t port : {demo_->port(), demo_->admin_port()}) {
    const bool admin = port == demo_->admin_port();
    http_connection c{port};
    c.send_raw(heads);
    for (int i = 0; i < 3; ++i) {
      const http_response head = c.read_response(/*head=*/true);
      EXPECT_EQ(head.status, admin ? 405u : 404u) << "port " << port;
      if (admin) {
        EXPECT_EQ(head.header("allow"), "GET");
      }
      // A GET would have been answered otherwise (200, its own length): no length is sent.
      EXPECT_FALSE(head.has_header("content-length")) << "port " << port;
      EXPECT_EQ(head.body, "");
    }
    EXPECT_EQ(c.read_response().status, 200u) << "port " << port;  // the next request, whole
  }
  const std::string m = metrics();
  EXPECT_EQ(sample(m, "floodgate_requests_total", {{"resource", "<unmatched>"}, {"result", "passed"}}),
            3.0)
      << m;
  EXPECT_EQ(sample(m, "floodgate_resources"), 1.0);
}

TEST_F(DemoTest, AmbiguouslyFramedRequestsAreRefusedAndTheirConnectionClosed) {
  start("{}");
  // What follows the header would be the body to a proxy that reads the header otherwise: it must
  // never be served as the next request (request smuggling, RFC 9112 section 6.3).
  const std::string smuggled = "GET /users/smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
  const auto answer = [&](const std::string& header) {
    http_connection c{demo_->port()};
    c.send_raw(header + "\r\n" + smuggled);
    const http_response first = c.read_response();
    EXPECT_EQ(first.header("Connection"), "close") << header;
    EXPECT_TRUE(c.closed_by_peer()) << header;
    return first.status;
  };
  const std::string post = "POST /hello HTTP/1.1\r\nHost: x\r\n";
  EXPECT_EQ(answer(post + "Transfer-Encoding: foo\r\n"), 400u);
  EXPECT_EQ(answer(post + "Transfer-Encoding: chunked, foo\r\n"), 400u);
  EXPECT_EQ(answer(post + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"), 400u);
  EXPECT_EQ(answer(post + "Transfer-Encoding: foo\r\nContent-Length: 5\r\n"), 400u);
  EXPECT_EQ(answer(post + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n"), 400u);
  EXPECT_EQ(answer("POST /hello HTTP/1.0\r\nTransfer-Encoding: chunked\r\n"), 400u);
  EXPECT_EQ(answer(post + "Transfer-Encoding: gzip, chunked\r\n"), 501u);
  EXPECT_EQ(answer("GET /hello HTTP/1.1\r\nHost: a\r\nHost: b\r\n"), 400u);
  EXPECT_TRUE(admin_json("/floodgate/resources").as_array().empty());

  // Chunked alone, in any case, is the framing Beast reads; no Host is served too.
  http_connection c{demo_->port()};
  c.send_raw(post + "Transfer-Encoding: Chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n" +
             "GET /hello HTTP/1.0\r\n\r\n");
  EXPECT_EQ(c.read_response().status, 404u);  // POST /hello: no such route
  EXPECT_EQ(c.read_response().status, 200u);
}

// An audit: `Connection: keep-alive` then `Connection: close` was answered and the connection
// kept open: only the first line was read. The lines form one list (RFC 9110 section 5.3).
TEST_F(DemoTest, ACloseInAnyConnectionLineClosesTheConnection) {
  start("flow:\n  - {resource: 'GET:/users/{id}', count: 0}\n");
  const auto answer = [&](std::uint16_t port, const std::string& target,
                          const std::string& connection_lines) {
    http_connection c{port};
    c.send_raw("GET " + target + " HTTP/1.1\r\nHost: x\r\n" + connection_lines + "\r\n");
    const http_response r = c.read_response();
    EXPECT_EQ(r.header("Connection"), "close") << target << " " << connection_lines;
    EXPECT_TRUE(c.closed_by_peer()) << target << " " << connection_lines;
    return r.status;
  };
  for (const std::string lines : {"Connection: keep-alive\r\nConnection: close\r\n",
                                  "Connection: foo\r\nConnection: close\r\n"}) {
    EXPECT_EQ(answer(demo_->port(), "/hello", lines), 200u);    // the handler's answer
    EXPECT_EQ(answer(demo_->port(), "/users/1", lines), 429u);  // the guard's
    EXPECT_EQ(answer(demo_->port(), "/nowhere", lines), 404u);
    EXPECT_EQ(answer(demo_->admin_port(), "/floodgate/rules", lines), 200u);
  }
  // Without a close in any line the connection serves the next request.
  http_connection c{demo_->port()};
  c.send_raw(
      "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: foo\r\nConnection: bar\r\n\r\n"
      "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(c.read_response().status, 200u);
  EXPECT_EQ(c.read_response().status, 200u);
}

// An audit: a CRLF after a POST body (which RFC 9112 section 2.2 asks servers to ignore before
// a request-line) made the next request a 400 and closed the connection.
TEST_F(DemoTest, EmptyLinesBeforeARequestLineAreIgnored) {
  start("{}");
  http_connection c{demo_->port()};
  c.send_raw(
      "POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab\r\n"
      "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
      "\r\n\r\nGET /users/7 HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(c.read_response().status, 404u);  // POST /hello: no such route
  const http_response hello = c.read_response();
  EXPECT_EQ(hello.status, 200u);
  EXPECT_EQ(hello.body, "hello");
  EXPECT_EQ(c.read_response().body, R"({"id":"7"})");
  // A line that is not empty is still no request-line.
  c.send_raw(" \r\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(c.read_response().status, 400u);
}

// An audit: idle connections took every descriptor of the process (20 000), and the admin port
// stopped answering too. Past --max-connections the main port answers 503 and closes at once.
TEST_F(DemoTest, ConnectionsPastTheCapAre503AndTheAdminPortStaysReachable) {
  start("{}", {"--max-connections", "2"});
  http_connection a{demo_->port()};
  http_connection b{demo_->port()};
  ASSERT_EQ(a.get("/hello").status, 200u);  // both accepted and counted
  ASSERT_EQ(b.get("/hello").status, 200u);
  http_connection c{demo_->port()};
  const http_response refused = c.read_response();  // answered unasked
  EXPECT_EQ(refused.status, 503u);
  EXPECT_EQ(refused.header("Retry-After"), "1");
  EXPECT_TRUE(c.closed_by_peer());
  EXPECT_EQ(http_get(demo_->admin_port(), "/floodgate/reload").status, 200u);
  EXPECT_EQ(sample(metrics(), "floodgate_requests_total",
                   {{"resource", "GET:/hello"}, {"result", "passed"}}),
            2.0)
      << "a refused connection is no request";
  a.close();  // a place frees once the server has seen the close
  EXPECT_TRUE(eventually([&] { return http_get(demo_->port(), "/hello").status == 200; },
                         std::chrono::seconds(10)));
  const demo_result zero = run_demo({"--port", "0", "--admin-port", "0", "--max-connections", "0"},
                                    std::chrono::seconds(30));
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_EQ(zero.err.rfind("floodgate-demo: --max-connections: must be 1..1000000\n", 0), 0u)
      << zero.err;
}

// An audit: a trailer field of 64 KiB made Beast throw from inside a read's completion, which
// ended the process (SIGABRT) on either port. Beast's header limit does not cover trailers.
TEST_F(DemoTest, AnOversizedTrailerOrChunkExtensionIs400AndTheServerStaysUp) {
  start("{}");
  const std::string post = "POST /hello HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  const auto answer = [&](std::uint16_t port, const std::string& body) {
    http_connection c{port};
    c.send_raw(post + body);
    const http_response r = c.read_response();
    EXPECT_EQ(r.header("Connection"), "close");
    return r.status;
  };
  const std::string trailer = "3\r\nabc\r\n0\r\nX-T: " + std::string(65534, 't') + "\r\n\r\n";
  EXPECT_EQ(answer(demo_->port(), trailer), 400u);
  EXPECT_EQ(answer(demo_->admin_port(), trailer), 400u);
  EXPECT_EQ(answer(demo_->port(), "3;x=" + std::string(1 << 20, 'e') + "\r\nabc\r\n0\r\n\r\n"),
            400u);
  // A trailer of a few fields is still read.
  http_connection c{demo_->port()};
  c.send_raw(post + "3\r\nabc\r\n0\r\nX-T: small\r\n\r\n");
  EXPECT_EQ(c.read_response().status, 404u);  // POST /hello: no such route
  EXPECT_EQ(http_get(demo_->port(), "/hello").status, 200u);
  EXPECT_EQ(demo_->wait(std::chrono::milliseconds(0)), -1) << "the demo is still running";
}

// RFC 9110 section 10.1.1: a client that waits for 100 (Continue) gets it at once, before it
// sends the body; the demo answered only once the body came (an audit waited 5 s for nothing).
TEST_F(DemoTest, ExpectContinueIsAnsweredBeforeTheBodyIsSent) {
  start("{}");
  http_connection c{demo_->port()};
  c.send_raw(
      "POST /users/1 HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
  EXPECT_EQ(c.read_response().status, 100u);
  c.send_raw("hello");
  EXPECT_EQ(c.read_response().status, 404u);  // POST: no such route
  EXPECT_EQ(c.get("/hello").status, 200u);    // the connection goes on
}

TEST_F(DemoTest, RequestHeaderOfMoreThan8KiBIs431ToTheByte) {
  start("{}");
  // Request line, fields and the blank line that ends them: `size` bytes in all.
  const auto request_of = [](std::size_t size) {
    const std::string frame = "GET /hello HTTP/1.1\r\nHost: x\r\nX-Pad: \r\n\r\n";
    std::string request = frame;
    request.insert(frame.find("\r\n\r\n"), std::string(size - frame.size(), 'a'));
    return request;
  };
  const auto status_of = [&](std::size_t size) {
    http_connection c{demo_->port()};
    c.send_raw(request_of(size));
    return c.read_response().status;
  };
  ASSERT_EQ(request_of(8192).size(), 8192u);
  EXPECT_EQ(status_of(8192), 200u);
  EXPECT_EQ(status_of(8193), 431u);
  EXPECT_EQ(status_of(8230), 431u);
}

TEST_F(DemoTest, ClientDisconnectMidRequestLeavesNothingInFlight) {
  start("{}");
  http_connection c{demo_->port()};
  c.send_raw("GET /work?ms=60000 HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(eventually([&] { return inflight("GET:/work") == 1; }, 10s));
  EXPECT_EQ(inflight("backend:work"), 1.0);
  c.close();
  // The handler would hold its entries for a minute: gone sooner, it was cancelled.
  EXPECT_TRUE(
      eventually([&] { return inflight("GET:/work") == 0 && inflight("backend:work") == 0; }, 10s))
      << "the handler is cancelled, not waited for";
  const auto resources = admin_json("/floodgate/resources").as_array();
  for (const auto& r : resources) EXPECT_EQ(r.at("concurrency").to_number<int>(), 0);
}

// The drain timeout is ten minutes here: a server that waited it out would not exit in time.
TEST_F(DemoTest, ShutdownFinishesRequestsInFlightRefusesNewOnesAndExitsZero) {
  start("{}", {"--drain-timeout-ms", "600000"});
  std::vector<http_response> responses(3);
  std::vector<std::thread> clients;
  const std::uint16_t port = demo_->port();
  for (auto& r : responses) {
    // Keep-alive connections: the answer must say that this one closes after it.
    clients.emplace_back([&r, port] { r = http_connection{port}.get("/work?ms=1500"); });
  }
  ASSERT_TRUE(eventually([&] { return inflight("GET:/work") == 3; }, 10s));
  demo_->signal(SIGTERM);
  EXPECT_TRUE(eventually([&] { return !can_connect(port); }, 2s)) << "listener closed at once";
  for (auto& t : clients) t.join();
  for (const auto& r : responses) {
    EXPECT_EQ(r.status, 200u);
    EXPECT_EQ(r.body, "worked 1500 ms\n");
    // The server closes the connection after this answer, and says so: a keep-alive client
    // sends its next request elsewhere instead of onto a closing connection.
    EXPECT_EQ(r.header("connection"), "close");
  }
  EXPECT_EQ(demo_->wait(15s), 0) << "exits when the requests are done, not at the drain timeout";
  EXPECT_NE(demo_->out().find("stopped; in-flight requests: 0\n"), std::string::npos)
      << demo_->out();
}

TEST_F(DemoTest, ShutdownClosesIdleKeepAliveConnectionsAtOnce) {
  start("{}", {"--drain-timeout-ms", "600000"});  // waiting for it would fail both checks
  http_connection idle{demo_->port()};
  ASSERT_EQ(idle.get("/hello").status, 200u);
  demo_->signal(SIGINT);
  EXPECT_TRUE(idle.closed_by_peer());
  EXPECT_EQ(demo_->wait(15s), 0);
}

TEST_F(DemoTest, DrainTimeoutCancelsWhatIsStillInFlight) {
  start("{}", {"--drain-timeout-ms", "300"});
  http_response r;
  std::thread client([&] { r = get("/work?ms=60000"); });
  ASSERT_TRUE(eventually([&] { return inflight("GET:/work") == 1; }, 10s));
  demo_->signal(SIGTERM);
  EXPECT_EQ(demo_->wait(15s), 0) << "the request of a minute was cut at the drain timeout";
  client.join();
  EXPECT_EQ(r.status, 0u) << "the connection was closed, not answered";
  EXPECT_NE(demo_->out().find("stopped; in-flight requests: 0\n"), std::string::npos)
      << demo_->out();
}

}  // namespace
}  // namespace floodgate::test
