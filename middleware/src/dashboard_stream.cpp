#include <floodgate/beast/dashboard_stream.hpp>

#include "tick_grid.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <list>
#include <mutex>
#include <stdexcept>
#include <vector>

#if defined(__linux__)
#include <linux/sockios.h>
#include <sys/ioctl.h>
#endif

namespace floodgate::beast {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

using snapshot = std::shared_ptr<const std::string>;

// The body ends when the connection closes, so no length and no chunking are needed.
constexpr std::string_view stream_header =
    "HTTP/1.1 200 OK\r\n"
    "Content-Type: text/event-stream\r\n"
    "Cache-Control: no-store\r\n"
    "X-Content-Type-Options: nosniff\r\n"
    "Connection: close\r\n"
    "\r\n"
    "retry: 2000\n\n";

constexpr std::string_view full_body = R"({"error":"too many stream subscribers"})";

std::string full_response() {
  std::string r =
      "HTTP/1.1 503 Service Unavailable\r\n"
      "Content-Type: application/json\r\n"
      "Retry-After: 5\r\n"
      "Connection: close\r\n"
      "Content-Length: ";
  r += std::to_string(full_body.size());
  r += "\r\n\r\n";
  r += full_body;
  return r;
}

/// Bytes written to `socket` that its peer has not acknowledged yet (Linux); 0 where unknown.
std::size_t unacknowledged(tcp::socket& socket) {
#if defined(__linux__)
  int queued = 0;
  if (::ioctl(socket.native_handle(), SIOCOUTQ, &queued) == 0 && queued > 0) {
    return static_cast<std::size_t>(queued);
  }
#else
  (void)socket;
#endif
  return 0;
}

void close(tcp::socket& socket) {
  boost::system::error_code ec;
  socket.shutdown(tcp::socket::shutdown_both, ec);
  socket.close(ec);
}

}  // namespace

struct dashboard_stream::hub : std::enable_shared_from_this<hub> {
  struct subscriber {
    explicit subscriber(tcp::socket s) : socket(std::move(s)) {}
    tcp::socket socket;
    bool writing = false;
    std::chrono::nanoseconds write_started{};
    std::uint64_t handed_over = 0;    ///< bytes given to the socket, all writes together
    std::uint64_t taken = 0;          ///< of those, what the client had taken at the last tick
    std::chrono::nanoseconds taking_since{};  ///< the last tick that found it taking bytes
    snapshot next;                   ///< the newest snapshot, waiting for the write in flight
    std::array<char, 256> discard{};  ///< what the client sends (nothing, normally) goes here
  };
  using subscriber_ptr = std::shared_ptr<subscriber>;

  hub(const asio::any_io_executor& executor, snapshot_source src, dashboard_stream_options opts)
      : strand(asio::make_strand(executor)),
        timer(strand),
        source(std::move(src)),
        options(opts) {}

  std::chrono::nanoseconds now() const {
    if (options.timers != nullptr) return options.timers->now();
    return std::chrono::steady_clock::now().time_since_epoch();
  }

  /** The next tick, `interval` after the previous one (no drift); ticks missed in a stall are
      skipped, not sent in a burst (each snapshot counts what happened since the one before, so
      a burst spread a stall's traffic over points a millisecond apart). On the strand. */
  void schedule() {
    if (options.timers != nullptr) {
      tick_handle = options.timers->schedule(
          options.interval, [weak = weak_from_this()] {
            if (auto self = weak.lock()) {
              asio::dispatch(self->strand, [self] {
                if (!self->stopped) self->tick();
              });
            }
          });
      return;
    }
    timer.expires_at(
        detail::next_tick(timer.expiry(), std::chrono::steady_clock::now(), options.interval));
    timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec && !self->stopped) self->tick();
    });
  }

  void tick() {
    publish();
    schedule();
  }

  void publish() {
    std::string body;
    {
      const std::lock_guard lock(source_mutex);
      if (source_stopped) return;
      body = source();
    }
    std::string event;
    event.reserve(body.size() + 8);
    event += "data: ";
    event += body;
    event += "\n\n";
    auto shared = std::make_shared<const std::string>(std::move(event));
    ring.push_back(shared);
    while (ring.size() > options.history) ring.pop_front();

    const auto t = now();
    for (auto it = live.begin(); it != live.end();) {
      const subscriber_ptr& s = *it;
      if (!s->writing) {
        // The write completed, which only says the kernel took the bytes: a client that does
        // not read leaves them queued there, its own buffer full, until ours fills too and a
        // write stalls (below). So a client that took nothing since the previous tick, with
        // more than a snapshot still queued, is not keeping up either; one that reads slowly
        // (a large history on a slow link) takes some every tick and stays.
        const std::uint64_t queued = unacknowledged(s->socket);
        const std::uint64_t taken = s->handed_over - std::min(queued, s->handed_over);
        if (taken > s->taken || queued <= shared->size()) {
          s->taking_since = t;
        } else if (t - s->taking_since >= options.stall_timeout) {
          close(s->socket);
          it = live.erase(it);
          count.store(live.size(), std::memory_order_release);
          continue;
        }
        s->taken = taken;
        write(s, {shared});
      } else if (t - s->write_started >= options.stall_timeout) {
        close(s->socket);  // it stopped reading: its write never ends
        it = live.erase(it);
        count.store(live.size(), std::memory_order_release);
        continue;
      } else {
        s->next = shared;  // replaces an older one: a slow reader skips seconds
      }
      ++it;
    }
  }

  /// Writes `parts` (and `prefix`, the response header, first if given). On the strand.
  void write(const subscriber_ptr& s, std::vector<snapshot> parts, bool with_header = false) {
    std::vector<asio::const_buffer> buffers;
    buffers.reserve(parts.size() + 1);
    if (with_header) buffers.push_back(asio::buffer(stream_header));
    for (const snapshot& p : parts) buffers.push_back(asio::buffer(*p));
    s->handed_over += asio::buffer_size(buffers);
    s->writing = true;
    s->write_started = now();
    asio::async_write(
        s->socket, buffers,
        asio::bind_executor(strand, [self = shared_from_this(), s, keep = std::move(parts)](
                                        boost::system::error_code ec, std::size_t) {
          s->writing = false;
          if (ec) {
            self->drop(s);
            return;
          }
          if (s->next) self->write(s, {std::exchange(s->next, nullptr)});
        }));
  }

  /// Reads until the client goes away, so a closed page frees its place at once.
  void watch(const subscriber_ptr& s) {
    s->socket.async_read_some(
        asio::buffer(s->discard),
        asio::bind_executor(strand, [self = shared_from_this(), s](boost::system::error_code ec,
                                                                   std::size_t) {
          if (ec) {
            self->drop(s);
            return;
          }
          self->watch(s);
        }));
  }

  void drop(const subscriber_ptr& s) {
    for (auto it = live.begin(); it != live.end(); ++it) {
      if (*it == s) {
        close(s->socket);
        live.erase(it);
        count.store(live.size(), std::memory_order_release);
        return;
      }
    }
  }

  void add(tcp::socket socket) {
    if (stopped) {
      close(socket);
      return;
    }
    if (live.size() >= options.max_subscribers) {
      auto rejected = std::make_shared<std::pair<tcp::socket, std::string>>(std::move(socket),
                                                                           full_response());
      asio::async_write(rejected->first, asio::buffer(rejected->second),
                        asio::bind_executor(strand, [rejected](boost::system::error_code,
                                                               std::size_t) {
                          close(rejected->first);
                        }));
      return;
    }
    auto s = std::make_shared<subscriber>(std::move(socket));
    s->taking_since = now();
    live.push_back(s);
    count.store(live.size(), std::memory_order_release);
    write(s, {ring.begin(), ring.end()}, true);
    watch(s);
  }

  void stop_all() {
    stopped = true;
    timer.cancel();
    if (options.timers != nullptr && tick_handle != 0) options.timers->cancel(tick_handle);
    for (const subscriber_ptr& s : live) close(s->socket);
    live.clear();
    count.store(0, std::memory_order_release);
    ring.clear();
  }

  asio::strand<asio::any_io_executor> strand;
  asio::steady_timer timer;
  snapshot_source source;
  dashboard_stream_options options;
  timer_queue::handle tick_handle = 0;
  std::deque<snapshot> ring;
  std::list<subscriber_ptr> live;
  bool stopped = false;
  std::atomic<std::size_t> count{0};
  /// stop() returns only once no source call is running, and none starts after it.
  std::mutex source_mutex;
  bool source_stopped = false;
};

dashboard_stream::dashboard_stream(asio::any_io_executor executor, snapshot_source source,
                                   dashboard_stream_options options)
    : hub_(std::make_shared<hub>(executor, std::move(source), options)) {
  if (options.interval <= std::chrono::milliseconds::zero()) {
    throw std::invalid_argument("dashboard_stream_options::interval must be positive");
  }
}

dashboard_stream::~dashboard_stream() { stop(); }

void dashboard_stream::start() {
  asio::dispatch(hub_->strand, [h = hub_] {
    if (h->stopped) return;
    h->timer.expires_at(std::chrono::steady_clock::now());
    h->tick();
  });
}

void dashboard_stream::stop() {
  {
    const std::lock_guard lock(hub_->source_mutex);
    hub_->source_stopped = true;
  }
  asio::dispatch(hub_->strand, [h = hub_] { h->stop_all(); });
}

void dashboard_stream::subscribe(tcp::socket socket) {
  asio::dispatch(hub_->strand,
                 [h = hub_, s = std::make_shared<tcp::socket>(std::move(socket))]() mutable {
                   h->add(std::move(*s));
                 });
}

std::size_t dashboard_stream::subscribers() const noexcept {
  return hub_->count.load(std::memory_order_acquire);
}

}  // namespace floodgate::beast
