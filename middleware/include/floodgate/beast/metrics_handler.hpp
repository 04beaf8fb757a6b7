// A `/metrics` route for any Beast server: Prometheus text format from prometheus collectables.
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <prometheus/collectable.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace floodgate::beast {

namespace http = boost::beast::http;

/// The Content-Type of the Prometheus text exposition format.
inline constexpr std::string_view metrics_content_type = "text/plain; version=0.0.4; charset=utf-8";

/** Serves collectables (a metrics_collector, a prometheus::Registry, ...) in the Prometheus text
    format (0.0.4).

    Rendering a thousand resources takes milliseconds: servers that must never stall a request
    thread render on a thread of their own (the demo does).

    @par Thread Safety
    add() before serving; render() and the call operator from any thread.

    @par Example
    @code
    floodgate::beast::metrics_handler metrics{{collector}};
    if (floodgate::beast::target_path(req.target()) == "/metrics") co_return metrics(req);
    @endcode
*/
class metrics_handler {
 public:
  metrics_handler() = default;
  explicit metrics_handler(std::vector<std::shared_ptr<const prometheus::Collectable>> collectables)
      : collectables_(std::move(collectables)) {}
  metrics_handler(const metrics_handler& other)
      : collectables_(other.collectables_), size_hint_(other.size_hint_.load()) {}

  void add(std::shared_ptr<const prometheus::Collectable> c) { collectables_.push_back(std::move(c)); }

  /// Every collectable's families, serialized.
  std::string render() const;

  /// A 200 response with render() as its body and the exposition Content-Type.
  http::response<http::string_body> response(unsigned version, bool keep_alive) const;

  template <class Body, class Fields>
  http::response<http::string_body> operator()(const http::request<Body, Fields>& req) const {
    return response(req.version(), req.keep_alive());
  }

 private:
  std::vector<std::shared_ptr<const prometheus::Collectable>> collectables_;
  mutable std::atomic<std::size_t> size_hint_{4096};  ///< last size, to allocate once
};

/// Wraps an already rendered exposition in a 200 response with the right Content-Type.
http::response<http::string_body> make_metrics_response(std::string body, unsigned version,
                                                        bool keep_alive);

}  // namespace floodgate::beast
