// The dashboard stream on real loopback sockets, its ticks on a manual clock (SPEC §11).
#include <floodgate/beast/dashboard_stream.hpp>
#include <floodgate/chain/clock.hpp>
#include <floodgate/chain/timer_queue.hpp>

#include "tick_grid.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <cerrno>
#include <sys/socket.h>

namespace floodgate::beast {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

/// Upper bound on polling rounds while waiting for socket I/O; a fail-safe, never a timing.
constexpr int max_rounds = 2000;

class DashboardStreamTest : public ::testing::Test {
 protected:
  void make_stream(dashboard_stream_options options = {}) {
    options.timers = &timers_;
    stream_ = std::make_unique<dashboard_stream>(
        io_.get_executor(),
        [this] {
          ++built_;
          return payload_ ? payload_() : R"({"n":)" + std::to_string(built_) + "}";
        },
        options);
    stream_->start();
    io_.poll();  // the first snapshot is taken at once
  }

  /// Moves the manual clock one tick on and lets the stream publish.
  void tick(std::chrono::milliseconds by = 1000ms) {
    clock_.advance_ms(by.count());
    timers_.run_due();
    io_.poll();
  }

  /// Connects a client and hands the accepted socket to the stream.
  std::unique_ptr<tcp::socket> subscribe(int receive_buffer = 0) {
    auto client = std::make_unique<tcp::socket>(client_io_);
    client->open(tcp::v4());
    if (receive_buffer > 0) {
      // Set before connecting so the advertised window stays this small.
      ::setsockopt(client->native_handle(), SOL_SOCKET, SO_RCVBUF, &receive_buffer,
                   sizeof receive_buffer);
    }
    client->connect(acceptor_.local_endpoint());
    stream_->subscribe(acceptor_.accept());
    io_.poll();
    return client;
  }

  /// Counts the events a reading client has received, without keeping them (they may be large).
  struct event_count {
    tcp::socket& client;
    std::size_t newlines = 0;
    /// The header holds 6 CRLFs and "retry: 2000\n\n"; each event then ends with "\n\n".
    std::size_t events() const { return newlines < 8 ? 0 : (newlines - 8) / 2; }
  };
  /// Reads from `reader` (driving the stream) until it has received `want` events.
  void read_events(event_count& reader, std::size_t want) {
    for (int i = 0; i < max_rounds && reader.events() < want; ++i) {
      io_.run_for(1ms);
      boost::system::error_code ec;
      while (reader.client.available(ec) > 0 && !ec) {
        char buf[65536];
        const std::size_t n = reader.client.read_some(asio::buffer(buf), ec);
        reader.newlines += static_cast<std::size_t>(std::count(buf, buf + n, '\n'));
      }
    }
  }

  /// Reads from `client` (driving the stream) until `done` holds for what was read.
  std::string read_until(tcp::socket& client, const std::function<bool(const std::string&)>& done,
                         std::string text = {}) {
    for (int i = 0; i < max_rounds && !done(text); ++i) {
      io_.run_for(1ms);
      boost::system::error_code ec;
      while (client.available(ec) > 0 && !ec) {
        char buf[65536];
        const std::size_t n = client.read_some(asio::buffer(buf), ec);
        text.append(buf, n);
      }
    }
    return text;
  }

  static std::size_t events(const std::string& text) {
    std::size_t n = 0;
    for (std::size_t at = text.find("data: "); at != std::string::npos;
         at = text.find("data: ", at + 1)) {
      ++n;
    }
    return n;
  }

  /// True once the stream has closed `client` (end of stream or reset).
  bool closed(tcp::socket& client) {
    for (int i = 0; i < max_rounds; ++i) {
      io_.run_for(1ms);
      boost::system::error_code ec;
      if (client.available(ec) > 0 || ec) {
        char buf[65536];
        client.read_some(asio::buffer(buf), ec);
      } else {
        // Nothing to read: peek without blocking for a closed connection.
        char c;
        const auto n = ::recv(client.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return true;
        continue;
      }
      if (ec) return true;
    }
    return false;
  }

  manual_clock clock_;
  manual_timer_queue timers_{clock_};
  asio::io_context io_;
  /// poll() and run_for() would otherwise stop the context for good once it ran out of work.
  asio::executor_work_guard<asio::io_context::executor_type> work_ = asio::make_work_guard(io_);
  asio::io_context client_io_;
  tcp::acceptor acceptor_{io_, {asio::ip::address_v4::loopback(), 0}};
  std::unique_ptr<dashboard_stream> stream_;
  int built_ = 0;
  std::function<std::string()> payload_;
};

TEST_F(DashboardStreamTest, ANewSubscriberGetsTheEventStreamHeaderAndTheHistoryFirst) {
  make_stream();
  tick();
  tick();  // three snapshots so far
  auto client = subscribe();
  const std::string text =
      read_until(*client, [](const std::string& t) { return events(t) >= 3; });
  EXPECT_EQ(text.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << text;
  EXPECT_NE(text.find("Content-Type: text/event-stream\r\n"), std::string::npos);
  EXPECT_NE(text.find("Connection: close\r\n"), std::string::npos);
  const auto first = text.find(R"(data: {"n":1})");
  const auto second = text.find(R"(data: {"n":2})");
  const auto third = text.find(R"(data: {"n":3})");
  ASSERT_NE(third, std::string::npos) << text;
  EXPECT_LT(first, second);
  EXPECT_LT(second, third);

  tick();
  const std::string more =
      read_until(*client, [](const std::string& t) { return t.find(R"({"n":4})") != t.npos; });
  EXPECT_NE(more.find("data: {\"n\":4}\n\n"), std::string::npos);
}

TEST_F(DashboardStreamTest, OneSnapshotASecondIsSharedByEverySubscriber) {
  make_stream();
  std::vector<std::unique_ptr<tcp::socket>> clients;
  for (int i = 0; i < 4; ++i) clients.push_back(subscribe());
  for (int i = 0; i < 5; ++i) tick();
  EXPECT_EQ(built_, 6);  // the first one at start, then one per tick, whatever the subscribers
  for (auto& c : clients) {
    const std::string text = read_until(*c, [](const std::string& t) { return events(t) >= 6; });
    EXPECT_EQ(events(text), 6u);
    EXPECT_NE(text.find(R"({"n":6})"), std::string::npos);
  }
}

TEST_F(DashboardStreamTest, TheHistoryIsABoundedRingOfTheLastSnapshots) {
  make_stream({.history = 3});
  for (int i = 0; i < 9; ++i) tick();  // snapshots 1..10
  auto client = subscribe();
  const std::string text =
      read_until(*client, [](const std::string& t) { return events(t) >= 3; });
  EXPECT_EQ(events(text), 3u);
  EXPECT_EQ(text.find(R"({"n":7})"), std::string::npos);
  EXPECT_NE(text.find(R"({"n":8})"), std::string::npos);
  EXPECT_NE(text.find(R"({"n":10})"), std::string::npos);
}

TEST_F(DashboardStreamTest, TheSeventeenthSubscriberGets503AndAFreedPlaceIsTakenAgain) {
  make_stream();
  std::vector<std::unique_ptr<tcp::socket>> clients;
  for (int i = 0; i < 16; ++i) clients.push_back(subscribe());
  EXPECT_EQ(stream_->subscribers(), 16u);

  auto refused = subscribe();
  const std::string answer = read_until(
      *refused, [](const std::string& t) { return t.find("too many") != t.npos; });
  EXPECT_EQ(answer.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << answer;
  EXPECT_NE(answer.find("Retry-After: 5\r\n"), std::string::npos);
  EXPECT_TRUE(closed(*refused));
  EXPECT_EQ(stream_->subscribers(), 16u);

  // A page that closes frees its place at once, without waiting for a write to fail.
  clients.front()->close();
  for (int i = 0; i < max_rounds && stream_->subscribers() != 15; ++i) io_.run_for(1ms);
  EXPECT_EQ(stream_->subscribers(), 15u);
  auto next = subscribe();
  const std::string ok =
      read_until(*next, [](const std::string& t) { return events(t) >= 1; });
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << ok;
  EXPECT_EQ(stream_->subscribers(), 16u);
}

TEST_F(DashboardStreamTest, ASubscriberThatStopsReadingIsDroppedWithinFiveSeconds) {
  // Snapshots far larger than the socket buffers: a client that does not read stalls the
  // stream's write to it at once.
  const std::string big(4 << 20, 'x');
  payload_ = [&big] { return R"({"pad":")" + big + "\"}"; };
  make_stream();
  auto stalled = subscribe(4096);
  auto reader = subscribe();
  EXPECT_EQ(stream_->subscribers(), 2u);

  // The reader keeps up; the stalled client never reads. Each tick is one manual second.
  event_count reading{*reader};
  int ticks = 0;
  while (stream_->subscribers() == 2 && ticks < 10) {
    read_events(reading, ticks + 1u);
    tick();
    ++ticks;
  }
  EXPECT_EQ(stream_->subscribers(), 1u);
  EXPECT_LE(ticks, 5) << "dropped after " << ticks << " s";
  EXPECT_GE(ticks, 4) << "dropped before its stall timeout";
  EXPECT_TRUE(closed(*stalled));
  // The one that reads is still served.
  read_events(reading, ticks + 1u);
  EXPECT_EQ(reading.events(), static_cast<std::size_t>(ticks + 1));
}

TEST_F(DashboardStreamTest, ASubscriberThatStopsReadingSmallSnapshotsIsDroppedToo) {
  // Snapshots of 2 KB: each write completes into the kernel's buffers, so only what the
  // client leaves unread shows that it stopped. The stalled client's window is a few KB.
  const std::string pad(2000, 'x');
  payload_ = [&pad] { return R"({"pad":")" + pad + "\"}"; };
  make_stream();
  auto stalled = subscribe(1024);
  auto reader = subscribe();
  event_count reading{*reader};
  int ticks = 0;
  while (stream_->subscribers() == 2 && ticks < 60) {
    read_events(reading, ticks + 1u);  // the snapshot taken at start, then one a tick
    tick();
    ++ticks;
  }
  EXPECT_EQ(stream_->subscribers(), 1u) << "still there after " << ticks << " s";
  EXPECT_GE(ticks, 5) << "dropped before its stall timeout";
  EXPECT_TRUE(closed(*stalled));
  read_events(reading, ticks + 1u);
  EXPECT_EQ(reading.events(), static_cast<std::size_t>(ticks + 1));  // the reader got every one
}

TEST_F(DashboardStreamTest, ASubscriberReadingTheHistorySlowlyIsKept) {
  // 300 snapshots of 2 KB of history, sent at once to a client that takes 8 KB a second: it
  // needs over a minute for them, far longer than the stall timeout, but it is reading.
  const std::string pad(2000, 'x');
  payload_ = [&pad] { return R"({"pad":")" + pad + "\"}"; };
  make_stream();
  for (int i = 0; i < 300; ++i) tick();
  auto slow = subscribe(4096);
  std::size_t received = 0;
  for (int second = 0; second < 12; ++second) {
    for (int i = 0; i < max_rounds && received < (second + 1u) * 8192; ++i) {
      io_.run_for(1ms);
      boost::system::error_code ec;
      if (slow->available(ec) > 0 && !ec) {
        char buf[8192];
        received += slow->read_some(
            asio::buffer(buf, std::min<std::size_t>(sizeof buf, (second + 1u) * 8192 - received)),
            ec);
      }
    }
    tick();
    ASSERT_EQ(stream_->subscribers(), 1u) << "dropped after " << second + 1 << " s";
  }
}

TEST_F(DashboardStreamTest, StopClosesEverySubscriberAndCallsTheSourceNoMore) {
  make_stream();
  auto client = subscribe();
  read_until(*client, [](const std::string& t) { return events(t) >= 1; });
  stream_->stop();
  io_.poll();
  EXPECT_TRUE(closed(*client));
  EXPECT_EQ(stream_->subscribers(), 0u);
  const int built = built_;
  tick();
  tick();
  EXPECT_EQ(built_, built);
  auto late = subscribe();
  EXPECT_TRUE(closed(*late));
}

// An audit: after the process stalled 3.6 s, the Asio timer fired every missed tick at once
// (snapshots a millisecond apart, each counting traffic "since the previous one").
TEST(TickGrid, ALateTimerSkipsTheTicksItMissedAndKeepsItsPhase) {
  using tp = std::chrono::steady_clock::time_point;
  const tp start{std::chrono::seconds(100)};
  EXPECT_EQ(detail::next_tick(start, start + 3ms, 1000ms), start + 1000ms);  // on time
  EXPECT_EQ(detail::next_tick(start, start + 3663ms, 1000ms), start + 4000ms);
  EXPECT_EQ(detail::next_tick(start, start + 1000ms, 1000ms), start + 2000ms);
  EXPECT_EQ(detail::next_tick(start, start + 999ms, 1000ms), start + 1000ms);
}

TEST(DashboardStreamOptions, AnIntervalThatIsNotPositiveIsRejected) {
  asio::io_context io;
  const auto source = [] { return std::string("{}"); };
  EXPECT_THROW(dashboard_stream(io.get_executor(), source, {.interval = 0ms}),
               std::invalid_argument);
  EXPECT_THROW(dashboard_stream(io.get_executor(), source, {.interval = -5ms}),
               std::invalid_argument);
}

}  // namespace
}  // namespace floodgate::beast
