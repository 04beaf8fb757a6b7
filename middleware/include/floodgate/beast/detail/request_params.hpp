// Supplies paramFlow `param:` values (header, query, client IP, origin) from a Beast request.
#pragma once

#include <floodgate/beast/client_address.hpp>
#include <floodgate/beast/guard_options.hpp>
#include <floodgate/beast/query_string.hpp>
#include <floodgate/chain/entry_options.hpp>

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/rfc7230.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace floodgate::beast::detail {

/// Up to this many forwarding header lines are read; more are ignored (bounded work).
inline constexpr std::size_t max_forwarded_lines = 8;

/** ASCII case-insensitive equality of two equally long header names. Eight bytes at a time, and
    a word is case-folded (only bytes 'A'..'Z' change, by bit tricks) only when the two differ:
    clients mostly spell a header as the configuration does. */
inline bool header_names_equal(const char* a, const char* b, std::size_t n) noexcept {
  constexpr std::uint64_t ones = 0x0101010101010101u;
  constexpr std::uint64_t high = 0x8080808080808080u;
  const auto fold = [](std::uint64_t w) noexcept {
    const std::uint64_t low7 = w & ~high;                   // each byte's low seven bits
    const std::uint64_t ge_a = low7 + (0x80 - 'A') * ones;  // high bit: byte >= 'A'
    const std::uint64_t gt_z = low7 + (0x7f - 'Z') * ones;  // high bit: byte > 'Z'
    const std::uint64_t upper = ge_a & ~gt_z & ~w & high;   // ASCII 'A'..'Z' only
    return w | (upper >> 2);                                // + 0x20
  };
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t x;
    std::uint64_t y;
    std::memcpy(&x, a + i, 8);
    std::memcpy(&y, b + i, 8);
    if (x != y && fold(x) != fold(y)) return false;
  }
  const auto fold_byte = [](unsigned char c) noexcept {
    return c >= 'A' && c <= 'Z' ? static_cast<unsigned char>(c | 0x20) : c;
  };
  for (; i < n; ++i) {
    const auto x = static_cast<unsigned char>(a[i]);
    const auto y = static_cast<unsigned char>(b[i]);
    if (x != y && fold_byte(x) != fold_byte(y)) return false;
  }
  return true;
}

/** A header name and its Beast field code, looked up once so that find_field() compares codes
    for the names Beast knows and only unknown fields' spellings otherwise. */
struct header_name {
  explicit header_name(std::string_view n) noexcept
      : name(n), code(boost::beast::http::string_to_field(n)) {}
  header_name(std::string_view n, boost::beast::http::field c) noexcept : name(n), code(c) {}

  std::string_view name;
  boost::beast::http::field code;
};

/// The value of the first field named `name` (case-insensitive, as basic_fields::find), if any.
template <class Fields>
std::optional<std::string_view> find_field(const Fields& fields, const header_name& name) noexcept {
  using boost::beast::http::field;
  if (name.code != field::unknown) {
    for (const auto& f : fields) {
      if (f.name() == name.code) return std::string_view{f.value()};
    }
    return std::nullopt;
  }
  for (const auto& f : fields) {
    if (f.name() != field::unknown) continue;  // a known name is not an unknown one
    const std::string_view n{f.name_string()};
    if (n.size() == name.name.size() && header_names_equal(n.data(), name.name.data(), n.size())) {
      return std::string_view{f.value()};
    }
  }
  return std::nullopt;
}

/** Whether the connection stays open after answering a request, from one walk of the few
    fields (no tree lookup): HTTP/1.1 unless `Connection: close`, HTTP/1.0 only with
    `Connection: keep-alive`. Every `Connection` line counts, as one list (RFC 9110 section 5.3):
    message::keep_alive() reads only the first, and a `close` in a second line must still close
    (RFC 9112 section 9.6). */
template <class Fields>
bool keep_alive(const Fields& fields, unsigned version) {
  using boost::beast::http::field;
  bool close = false;
  bool keep = false;
  for (const auto& f : fields) {
    if (f.name() != field::connection) continue;
    boost::beast::http::token_list tokens{f.value()};  // exists() is not const
    close = close || tokens.exists("close");
    keep = keep || tokens.exists("keep-alive");
  }
  return version < 11 ? keep && !close : !close;
}

/// The client address of a request under `options` (peer, or forwarded by a trusted proxy).
template <class Fields>
boost::asio::ip::address resolve_client(const Fields& fields, const boost::asio::ip::address& peer,
                                        const guard_options& options) {
  if (options.trusted_proxies.empty() || !is_trusted(peer, options.trusted_proxies)) {
    return peer;
  }
  std::array<std::string_view, max_forwarded_lines> lines{};
  std::size_t n = 0;
  auto range = fields.equal_range(options.forwarded_header);
  for (auto it = range.first; it != range.second && n < lines.size(); ++it) {
    lines[n++] = std::string_view{it->value()};
  }
  return client_address(peer, std::span<const std::string_view>{lines.data(), n},
                        options.trusted_proxies);
}

/** The parameter source of one request during engine::enter(). The engine asks only when a rule
    of the resource needs a value, so a request pays nothing for parameters nobody limits. An
    absent or empty value is "no parameter": the rule does not apply to the request. */
template <class Fields>
class request_params {
 public:
  /// `route` (optional) supplies `path` parameters; each argument must outlive this object.
  request_params(const Fields& fields, std::string_view target, std::string_view origin,
                 const boost::asio::ip::address& peer, const guard_options& options,
                 const route_match* route = nullptr) noexcept
      : fields_(&fields),
        target_(target),
        origin_(origin),
        peer_(&peer),
        options_(&options),
        route_(route) {}

  request_params(const request_params&) = delete;
  request_params& operator=(const request_params&) = delete;

  param_extractor extractor() const noexcept { return {this, &extract}; }

 private:
  static param_value extract(const void* self, const param_selector& s) noexcept {
    // The values must outlive enter(); decoded ones live in this object's scratch strings.
    auto& p = *const_cast<request_params*>(static_cast<const request_params*>(self));
    try {
      std::string_view v;
      switch (s.from) {
        case param_source::header:
          v = find_field(*p.fields_, header_name{s.name}).value_or(std::string_view{});
          break;
        case param_source::query: {
          const auto q = find_query_param(p.target_, s.name, p.next_scratch());
          v = q.value_or(std::string_view{});
          break;
        }
        case param_source::client_ip: {
          std::string& out = p.next_scratch();
          out = resolve_client(*p.fields_, *p.peer_, *p.options_).to_string();
          v = out;
          break;
        }
        case param_source::origin:
          v = p.origin_;
          break;
        case param_source::path:
          v = p.route_ != nullptr ? p.route_->param(s.name) : std::string_view{};
          if (v.find('%') != std::string_view::npos) {
            v = decode_path_segment(v, p.next_scratch());  // as query values are decoded
          }
          break;
      }
      return v.empty() ? param_value{} : param_value{v};
    } catch (...) {
      return {};  // no value: the rule does not apply (fail open)
    }
  }

  std::string& next_scratch() {
    if (!scratch_) scratch_.emplace();  // only requests that a rule asks for a value pay
    return (*scratch_)[next_++ % scratch_->size()];
  }

  const Fields* fields_;
  std::string_view target_;
  std::string_view origin_;
  const boost::asio::ip::address* peer_;
  const guard_options* options_;
  const route_match* route_;
  std::optional<std::array<std::string, 4>> scratch_;  // one per paramFlow rule checked
  std::size_t next_ = 0;
};

}  // namespace floodgate::beast::detail
