// Route templates: names a request `METHOD:/users/{id}` without ever using its raw path.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace floodgate::beast {

/// The one resource every request that matches no route shares (bounds resource cardinality).
inline constexpr std::string_view unmatched_resource = "<unmatched>";

namespace detail {
struct route;
}

/** The outcome of matching a request against a @ref route_table: the route's index, its
    resource name and the values of its `{name}` segments.

    Non-owning: the parameter values point into the request target, the rest into the table.
*/
class route_match {
 public:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_params = 8;

  /// An unmatched result.
  route_match() noexcept = default;

  bool matched() const noexcept { return route_ != nullptr; }
  /// The index returned by route_table::add(), or npos.
  std::size_t index() const noexcept { return index_; }
  /// `METHOD:template`, or `<unmatched>`.
  std::string_view resource() const noexcept;
  /// The template as added (`/users/{id}`); empty when unmatched.
  std::string_view path_template() const noexcept;
  /// The raw (still percent-encoded) segment matched by `{name}`; empty if there is none.
  std::string_view param(std::string_view name) const noexcept;

 private:
  friend class route_table;
  /// Where a `{name}` segment lies in the matched target: offset and length. Kept as two
  /// 32-bit numbers, not string_views (half the size): a guard's coroutine frame holds one
  /// match, and a frame must stay under about 1 KB to be a cheap allocation (guard.hpp).
  struct span {
    std::uint32_t offset = 0;
    std::uint32_t length = 0;
  };

  const detail::route* route_ = nullptr;
  const char* target_ = nullptr;  // the matched target's first byte
  std::size_t index_ = npos;
  std::array<span, max_params> params_{};
};

/** A small router for naming resources: templates such as `/users/{id}` matched segment by
    segment (the equivalent of Sentinel's UrlCleaner).

    A `{name}` segment matches exactly one non-empty path segment; other segments match
    literally (no decoding, no slash folding: `//users/1` and `/users/1/` match nothing). The
    query and fragment are ignored. The first matching route wins.

    @par Thread Safety
    add() all routes before serving; match() may then run on any number of threads.

    @par Example
    @code
    floodgate::beast::route_table routes;
    routes.add("GET", "/users/{id}");
    routes.match("GET", "/users/42?x=1").resource();  // "GET:/users/{id}"
    @endcode
*/
class route_table {
 public:
  route_table();
  ~route_table();
  route_table(route_table&&) noexcept;
  route_table& operator=(route_table&&) noexcept;

  /** Adds a route and returns its index. Throws `std::invalid_argument` when the template does
      not start with `/`, has a brace that is not a whole `{name}` segment, or has more than
      route_match::max_params parameters. */
  std::size_t add(std::string_view method, std::string_view path_template);

  /// Matches a request target (origin form, query allowed). Never allocates.
  route_match match(std::string_view method, std::string_view target) const noexcept;

  std::size_t size() const noexcept { return routes_.size(); }

 private:
  std::vector<std::unique_ptr<detail::route>> routes_;  // stable addresses for route_match
};

/// The path part of a request target: up to the first `?` or `#`; of an absolute-form target
/// (`http://host/a?b`), the path after the authority (`/a`; `/` when it has none).
std::string_view target_path(std::string_view target) noexcept;

}  // namespace floodgate::beast
