// The dashboard's live feed (SPEC §11): Server-Sent Events at admin `GET /floodgate/stream`.
#pragma once

#include <floodgate/chain/timer_queue.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace floodgate::beast {

/// Limits and timing of a @ref dashboard_stream.
struct dashboard_stream_options {
  /// Subscribers served at once; the next one is answered 503.
  std::size_t max_subscribers = 16;
  /// Snapshots kept and sent first to a new subscriber: 5 minutes at one a second.
  std::size_t history = 300;
  /// Between two snapshots; positive (the constructor throws `invalid_argument` otherwise).
  std::chrono::milliseconds interval{1000};
  /** A subscriber that has not kept up for this long when a snapshot is published is dropped:
      its write has been pending that long, or (Linux) at every tick since, its socket held more
      than one snapshot and its client had taken none of it since the tick before. Checked every
      `interval`, so one that stops reading is gone within `stall_timeout + interval` of its
      receive buffer filling up; one that reads slowly (a long history on a slow link) stays
      while it takes some every tick, until a write of its stalls. */
  std::chrono::milliseconds stall_timeout{4000};
  /// The tick timer and the clock of the stall check; must outlive the stream. Null: an Asio
  /// steady timer on the stream's executor. Tests pass a manual_timer_queue.
  timer_queue* timers = nullptr;
};

/** Server-Sent Events of one JSON snapshot a second, shared by every subscriber.

    Every `interval` the stream asks its source for one snapshot (a JSON text without newlines),
    keeps it in a ring of the last `history` ones and sends it to each subscriber. A new
    subscriber gets the `200 text/event-stream` header and the whole ring at once, then each new
    snapshot. Memory is bounded: the ring, and per subscriber one write in flight plus the
    newest snapshot waiting behind it (a slow reader skips seconds, it never queues them). A
    subscriber that stops reading is dropped (see `stall_timeout`); one past `max_subscribers`
    gets a `503` and is closed.

    The server hands over the connection of a `GET /floodgate/stream` request once it has read
    the request; the response is delimited by closing the connection (`Connection: close`).

    @par Thread Safety
    start(), stop(), subscribe() and subscribers() from any thread; the work runs on a strand of
    the executor. The source is called on that strand, never after stop() returned. The executor
    must outlive the stream (destroy it before its io_context; pending work keeps what it uses).

    @par Example
    @code
    floodgate::beast::dashboard_stream stream{admin_io.get_executor(),
                                              floodgate::beast::dashboard_snapshot{engine, &watcher}};
    stream.start();
    // in the admin server, for GET /floodgate/stream:
    stream.subscribe(std::move(socket));
    @endcode
*/
class dashboard_stream {
 public:
  /// Builds one snapshot: a JSON text on one line.
  using snapshot_source = std::function<std::string()>;

  /// The request target the stream answers.
  static constexpr std::string_view path = "/floodgate/stream";

  dashboard_stream(boost::asio::any_io_executor executor, snapshot_source source,
                   dashboard_stream_options options = {});
  /// Stops (see stop()).
  ~dashboard_stream();
  dashboard_stream(const dashboard_stream&) = delete;
  dashboard_stream& operator=(const dashboard_stream&) = delete;

  /// Takes the first snapshot now and one every `interval` after it.
  void start();
  /// Stops the ticks and closes every subscriber; later subscribers are closed at once.
  void stop();
  /// Serves the stream on `socket`, whose request was read already (or answers 503 if full).
  void subscribe(boost::asio::ip::tcp::socket socket);
  /// Subscribers being served now.
  std::size_t subscribers() const noexcept;

  struct hub;

 private:
  std::shared_ptr<hub> hub_;
};

}  // namespace floodgate::beast
