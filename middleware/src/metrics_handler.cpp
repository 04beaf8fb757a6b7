#include <floodgate/beast/metrics_handler.hpp>

#include <boost/beast/http/field.hpp>

#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <iterator>

namespace floodgate::beast {

std::string metrics_handler::render() const {
  std::vector<prometheus::MetricFamily> families;
  for (const auto& c : collectables_) {
    auto f = c->Collect();
    families.insert(families.end(), std::make_move_iterator(f.begin()),
                    std::make_move_iterator(f.end()));
  }
  return prometheus::TextSerializer{}.Serialize(families);
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
