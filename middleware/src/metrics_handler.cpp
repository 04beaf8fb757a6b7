#include <floodgate/beast/metrics_handler.hpp>

#include <boost/beast/http/field.hpp>

#include "text_format.hpp"

#include <prometheus/metric_family.h>

#include <iterator>

namespace floodgate::beast {

std::string metrics_handler::render() const {
  std::vector<prometheus::MetricFamily> families;
  for (const auto& c : collectables_) {
    auto f = c->Collect();
    families.insert(families.end(), std::make_move_iterator(f.begin()),
                    std::make_move_iterator(f.end()));
  }
  std::string out;
  out.reserve(size_hint_.load(std::memory_order_relaxed));
  write_text_format(families, out);
  size_hint_.store(out.size() + out.size() / 8, std::memory_order_relaxed);
  return out;
}

http::response<http::string_body> metrics_handler::response(unsigned version,
                                                            bool keep_alive) const {
  return make_metrics_response(render(), version, keep_alive);
}

http::response<http::string_body> make_metrics_response(std::string body, unsigned version,
                                                        bool keep_alive) {
  http::response<http::string_body> res{http::status::ok, version};
  res.set(http::field::content_type, metrics_content_type);
  res.body() = std::move(body);
  res.keep_alive(keep_alive);
  res.prepare_payload();
  return res;
}

}  // namespace floodgate::beast
