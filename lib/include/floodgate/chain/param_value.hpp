// Arguments of an entry, for hot-parameter rules.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace floodgate {

/** One argument of an entry: a string or an integer. Non-owning: the string must outlive the
    entry() call. */
class param_value {
 public:
  enum class kind : std::uint8_t { none, string, integer };

  constexpr param_value() noexcept = default;
  constexpr param_value(std::string_view s) noexcept : kind_(kind::string), str_(s) {}  // NOLINT
  constexpr param_value(const char* s) noexcept : kind_(kind::string), str_(s) {}       // NOLINT
  constexpr param_value(std::int64_t i) noexcept : kind_(kind::integer), int_(i) {}     // NOLINT
  constexpr param_value(int i) noexcept : kind_(kind::integer), int_(i) {}              // NOLINT

  constexpr kind type() const noexcept { return kind_; }
  constexpr bool empty() const noexcept { return kind_ == kind::none; }
  constexpr std::string_view as_string() const noexcept { return str_; }
  constexpr std::int64_t as_integer() const noexcept { return int_; }

 private:
  kind kind_ = kind::none;
  std::string_view str_;
  std::int64_t int_ = 0;
};

/** Where the middleware takes an HTTP request's parameter from (`param: {from, name}`); `path`
    is a `{name}` segment of the matched route template (raw, as in the target). */
enum class param_source : std::uint8_t { header, query, client_ip, origin, path };

struct param_selector {
  param_source from = param_source::header;
  std::string name;  ///< header, query or path parameter name; empty for client_ip / origin
  friend bool operator==(const param_selector&, const param_selector&) = default;
};

}  // namespace floodgate
