#include <floodgate/beast/route_table.hpp>

#include <boost/beast/core/string.hpp>

#include <stdexcept>

namespace floodgate::beast {

namespace detail {

struct route_segment {
  std::string text;  ///< literal text, or the parameter name
  bool is_param = false;
};

struct route {
  std::string method;
  std::string path_template;
  std::string resource;  ///< METHOD:template
  std::vector<route_segment> segments;
  std::size_t index = 0;
};

}  // namespace detail

namespace {

/// Splits `/a/b` into `a`, `b`; calls f(segment) for each and stops when f returns false.
template <class F>
bool for_each_segment(std::string_view path, F&& f) {
  path.remove_prefix(1);  // the leading '/'
  for (;;) {
    const std::size_t slash = path.find('/');
    if (!f(path.substr(0, slash))) {
      return false;
    }
    if (slash == std::string_view::npos) {
      return true;
    }
    path.remove_prefix(slash + 1);
  }
}

}  // namespace

std::string_view target_path(std::string_view target) noexcept {
  // Absolute form (`http://host/path`, RFC 9112 section 3.2.2, which a server must accept):
  // the path after the authority.
  const auto scheme_end = target.find("://");
  if (scheme_end != std::string_view::npos && target.find_first_of("/?#") > scheme_end) {
    const std::string_view scheme = target.substr(0, scheme_end);
    const bool http = boost::beast::iequals(scheme, "http") || boost::beast::iequals(scheme, "https");
    if (!http) {
      return {};  // another scheme: no route's
    }
    const auto path = target.find_first_of("/?#", scheme_end + 3);
    if (path == std::string_view::npos || target[path] != '/') {
      return "/";  // an empty path is the root (RFC 9110 section 4.2.3)
    }
    target.remove_prefix(path);
  }
  return target.substr(0, target.find_first_of("?#"));
}

std::string_view route_match::resource() const noexcept {
  return route_ != nullptr ? std::string_view{route_->resource} : unmatched_resource;
}

std::string_view route_match::path_template() const noexcept {
  return route_ != nullptr ? std::string_view{route_->path_template} : std::string_view{};
}

std::string_view route_match::param(std::string_view name) const noexcept {
  if (route_ == nullptr) {
    return {};
  }
  std::size_t i = 0;
  for (const auto& s : route_->segments) {
    if (s.is_param) {
      if (s.text == name) {
        return {target_ + params_[i].offset, params_[i].length};
      }
      ++i;
    }
  }
  return {};
}

route_table::route_table() = default;
route_table::~route_table() = default;
route_table::route_table(route_table&&) noexcept = default;
route_table& route_table::operator=(route_table&&) noexcept = default;

std::size_t route_table::add(std::string_view method, std::string_view path_template) {
  if (path_template.empty() || path_template.front() != '/') {
    throw std::invalid_argument("route template must start with '/': " +
                                std::string(path_template));
  }
  auto r = std::make_unique<detail::route>();
  r->method = method;
  r->path_template = path_template;
  r->resource = std::string(method) + ":" + std::string(path_template);
  r->index = routes_.size();
  std::size_t params = 0;
  for_each_segment(path_template, [&](std::string_view seg) {
    const bool braced = seg.size() >= 2 && seg.front() == '{' && seg.back() == '}';
    const std::string_view inner = braced ? seg.substr(1, seg.size() - 2) : seg;
    if (inner.find_first_of("{}") != std::string_view::npos || (braced && inner.empty())) {
      throw std::invalid_argument("route parameters must be whole segments: " +
                                  std::string(path_template));
    }
    params += braced ? 1 : 0;
    r->segments.push_back({std::string(inner), braced});
    return true;
  });
  if (params > route_match::max_params) {
    throw std::invalid_argument("too many route parameters: " + std::string(path_template));
  }
  routes_.push_back(std::move(r));
  return routes_.size() - 1;
}

route_match route_table::match(std::string_view method, std::string_view target) const noexcept {
  route_match m;
  const std::string_view path = target_path(target);
  if (path.empty() || path.front() != '/') {
    return m;  // asterisk form, or an absolute form without a path: never a route
  }
  for (const auto& r : routes_) {
    if (r->method != method) {
      continue;
    }
    std::size_t seg = 0;
    std::size_t param = 0;
    const bool all = for_each_segment(path, [&](std::string_view s) {
      if (seg == r->segments.size()) {
        return false;
      }
      const auto& want = r->segments[seg++];
      if (want.is_param) {
        // A segment lies within the target, whose size Beast's header limit keeps far below
        // 4 GiB; a target beyond that (a custom parser) matches no route with parameters.
        const auto offset = static_cast<std::size_t>(s.data() - target.data());
        if (offset > UINT32_MAX || s.size() > UINT32_MAX) {
          return false;
        }
        m.params_[param++] = {static_cast<std::uint32_t>(offset),
                              static_cast<std::uint32_t>(s.size())};
        return !s.empty();
      }
      return s == want.text;
    });
    if (all && seg == r->segments.size()) {
      m.route_ = r.get();
      m.target_ = target.data();
      m.index_ = r->index;
      return m;
    }
  }
  m.params_ = {};
  return m;
}

}  // namespace floodgate::beast
