// floodgate-demo: a multi-threaded Beast server guarded by floodgate (SPEC §5).
#include "demo_app.hpp"
#include "demo_options.hpp"
#include "http_server.hpp"

#include <floodgate/beast/admin_api.hpp>
#include <floodgate/beast/cluster_metrics_collector.hpp>
#include <floodgate/beast/dashboard_snapshot.hpp>
#include <floodgate/beast/dashboard_stream.hpp>
#include <floodgate/beast/metrics_collector.hpp>
#include <floodgate/beast/metrics_handler.hpp>
#include <floodgate/cluster/redis_cluster.hpp>
#include <floodgate/config/rule_file_watcher.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdint>
#include <functional>
#include <iostream>
#include <memory>
#include <thread>
#include <variant>
#include <vector>

namespace floodgate::demo {
namespace {

using work_guard = asio::executor_work_guard<asio::io_context::executor_type>;

std::string url(const tcp::endpoint& ep) {
  const bool v6 = ep.address().is_v6();
  std::string out = "http://";
  out += v6 ? "[" : "";
  out += ep.address().to_string();
  out += v6 ? "]:" : ":";
  out += std::to_string(ep.port());
  return out;
}

/// The admin port's connections: the dashboard's 16 stream subscribers, scrapes, an operator.
constexpr std::size_t admin_connections = 256;

/** The main port's cap: as asked, and always short of the process's open-file limit by what the
    admin port, the rule file's watch and Redis need, so a flood of connections on the main port
    leaves the admin port reachable. */
std::size_t main_connection_cap(std::size_t asked) {
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur == RLIM_INFINITY) return asked;
  constexpr std::size_t reserved = admin_connections + 256;
  const auto limit = static_cast<std::size_t>(files.rlim_cur);
  return std::min(asked, limit > reserved + 64 ? limit - reserved : 64);
}

/// Every reload after start-up, on stderr: an operator who saved a bad file sees why it was not
/// taken (and that the last good rules stay) without asking the admin API.
void log_reload(const config::reload_status& status) {
  if (status.ok) {
    std::cerr << "floodgate-demo: rules reloaded from " << status.file << '\n';
    return;
  }
  std::cerr << "floodgate-demo: rules not reloaded, the last good rules stay in force:\n"
            << status.error;
  if (!status.error.empty() && status.error.back() != '\n') std::cerr << '\n';
}

/** Drives a graceful stop on the control thread: stop accepting and close idle connections at
    once, poll until the servers are empty, abort what is left at the drain deadline. */
class shutdown_sequence {
 public:
  shutdown_sequence(asio::io_context& control, std::vector<http_server*> servers,
                    std::chrono::milliseconds drain_timeout, std::function<void()> finished)
      : poll_(control),
        servers_(std::move(servers)),
        drain_timeout_(drain_timeout),
        finished_(std::move(finished)) {}

  void begin() {
    if (started_) {
      abort();  // a second signal: do not wait any longer
      return;
    }
    started_ = true;
    for (auto* s : servers_) s->shutdown();
    deadline_ = std::chrono::steady_clock::now() + drain_timeout_;
    check();
  }

 private:
  void abort() {
    if (aborted_) return;
    aborted_ = true;
    for (auto* s : servers_) s->abort();
    // Cancelled handlers unwind promptly; this bound only guards against one that does not.
    deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  }

  void check() {
    std::size_t open = 0;
    for (auto* s : servers_) open += s->connections();
    const auto now = std::chrono::steady_clock::now();
    if (open == 0 || (aborted_ && now >= deadline_)) {
      finished_();
      return;
    }
    if (now >= deadline_) abort();
    poll_.expires_after(std::chrono::milliseconds(10));
    poll_.async_wait([this](boost::system::error_code ec) {
      if (!ec) check();
    });
  }

  asio::steady_timer poll_;
  std::vector<http_server*> servers_;
  std::chrono::milliseconds drain_timeout_;
  std::function<void()> finished_;
  std::chrono::steady_clock::time_point deadline_;
  bool started_ = false;
  bool aborted_ = false;
};

int run(const demo_options& options) {
  const unsigned threads =
      options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());

  // Declared before the I/O contexts: coroutine frames destroyed with them still exit entries.
  engine eng;
  asio::io_context control{1};
  // Installed before anything is served: a SIGTERM sent as soon as `listening on` is printed
  // (or earlier) is queued for the shutdown below, not the default action that kills the
  // process without draining.
  asio::signal_set signals{control, SIGINT, SIGTERM};
  config::rule_file_watcher watcher{
      control.get_executor(), eng, options.rules, {.on_attempt = log_reload}};
  if (const config::parse_result loaded = watcher.start(); !loaded.ok()) {
    std::string text = loaded.error_text();
    if (!text.empty() && text.back() != '\n') text += '\n';
    std::cerr << text << std::flush;
    return 2;
  }
  // Idle until the rules hold clusterMode rules; follows reloads.
  const floodgate::cluster::redis_cluster redis{
      eng, {.default_redis = options.redis, .on_event = [](std::string_view event) {
              std::cerr << "floodgate-demo: " << event << '\n';
            }}};
  auto collector = std::make_shared<floodgate::beast::metrics_collector>(eng, &watcher);
  auto cluster_collector = std::make_shared<floodgate::beast::cluster_metrics_collector>(
      [&redis] { return redis.status(); });
  const floodgate::beast::metrics_handler metrics{{collector, cluster_collector}};
  const floodgate::beast::admin_api admin{
      eng, {.watcher = &watcher,
            .metrics = &metrics,
            .cluster = [&redis] { return floodgate::cluster::status_json(redis.status()); }}};
  const floodgate::beast::route_table routes = demo_routes();
  asio::thread_pool render_pool{1};

  std::vector<std::unique_ptr<asio::io_context>> contexts;
  std::vector<asio::io_context*> workers;
  for (unsigned i = 0; i < threads; ++i) {
    contexts.push_back(std::make_unique<asio::io_context>(1));
    workers.push_back(contexts.back().get());
  }
  contexts.push_back(std::make_unique<asio::io_context>(1));
  asio::io_context& admin_context = *contexts.back();

  // Set at the first signal: answers made from then on close their connection.
  std::atomic<bool> draining{false};
  http_server server{workers,
                     {asio::ip::make_address(options.address), options.port},
                     make_main_handler(eng, routes, options, metrics, render_pool, draining),
                     {.max_connections = main_connection_cap(options.max_connections)}};
  // The dashboard's live feed; destroyed before the contexts its sockets live on.
  floodgate::beast::dashboard_stream stream{admin_context.get_executor(),
                                            floodgate::beast::dashboard_snapshot{eng, &watcher}};
  http_server admin_server{{&admin_context},
                           {asio::ip::address_v4::loopback(), options.admin_port},
                           make_admin_handler(admin),
                           {.max_connections = admin_connections},
                           make_stream_taker(stream)};

  std::vector<work_guard> guards;
  for (auto& c : contexts) guards.push_back(asio::make_work_guard(*c));
  server.start();
  admin_server.start();
  stream.start();
  std::vector<std::thread> pool;
  for (auto& c : contexts) {
    pool.emplace_back([&ctx = *c] {
      // A completion handler that throws (a library's bug) ends run(); its connection is lost,
      // the server is not: the thread logs it and runs on.
      for (;;) {
        try {
          ctx.run();
          return;
        } catch (const std::exception& e) {
          std::cerr << "floodgate-demo: an I/O handler threw (" << e.what()
                    << "); its connection is dropped\n";
        } catch (...) {
          std::cerr << "floodgate-demo: an I/O handler threw; its connection is dropped\n";
        }
      }
    });
  }

  std::cout << "listening on " << url(server.local_endpoint()) << '\n'
            << "admin on " << url(admin_server.local_endpoint()) << std::endl;

  shutdown_sequence stop{control, {&server, &admin_server}, options.drain_timeout, [&] {
                           watcher.stop();
                           signals.cancel();
                           for (auto& c : contexts) c->stop();
                         }};
  std::function<void(boost::system::error_code, int)> on_signal =
      [&](boost::system::error_code ec, int) {
        if (ec) return;
        signals.async_wait(on_signal);  // armed first: finishing cancels it
        guards.clear();
        stream.stop();  // subscribers are not requests to drain
        draining.store(true, std::memory_order_relaxed);
        stop.begin();
      };
  signals.async_wait(on_signal);
  control.run();

  for (auto& t : pool) t.join();
  render_pool.join();
  std::cout << "stopped; in-flight requests: " << eng.in_flight() << std::endl;
  return 0;
}

}  // namespace
}  // namespace floodgate::demo

int main(int argc, char** argv) {
  const auto parsed = floodgate::demo::parse_options(argc, argv);
  if (const auto* failure = std::get_if<floodgate::demo::parse_failure>(&parsed)) {
    (failure->exit_code == 0 ? std::cout : std::cerr) << failure->message;
    return failure->exit_code;
  }
  try {
    return floodgate::demo::run(std::get<floodgate::demo::demo_options>(parsed));
  } catch (const std::exception& e) {
    std::cerr << "floodgate-demo: " << e.what() << '\n';
    return 1;
  }
}
