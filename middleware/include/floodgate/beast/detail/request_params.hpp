// Supplies paramFlow `param:` values (header, query, client IP, origin) from a Beast request.
#pragma once

#include <floodgate/beast/client_address.hpp>
#include <floodgate/beast/guard_options.hpp>
#include <floodgate/beast/query_string.hpp>
#include <floodgate/core/entry_options.hpp>

#include <boost/beast/core/string.hpp>

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace floodgate::beast::detail {

/// Up to this many forwarding header lines are read; more are ignored (bounded work).
inline constexpr std::size_t max_forwarded_lines = 8;

/** The value of the first field named `name` (case-insensitive, as basic_fields::find), if any.
    Walks the request's few fields comparing lengths first: basic_fields::find orders by a
    case-insensitive less-than and so compares the matching name twice, out of line. */
template <class Fields>
std::optional<std::string_view> find_field(const Fields& fields, std::string_view name) noexcept {
  for (const auto& f : fields) {
    const std::string_view n{f.name_string()};
    if (n.size() == name.size() && boost::beast::iequals(n, name)) {
      return std::string_view{f.value()};
    }
  }
  return std::nullopt;
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
  request_params(const Fields& fields, std::string_view target, std::string_view origin,
                 const boost::asio::ip::address& peer, const guard_options& options) noexcept
      : fields_(&fields), target_(target), origin_(origin), peer_(&peer), options_(&options) {}

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
          v = find_field(*p.fields_, s.name).value_or(std::string_view{});
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
  std::optional<std::array<std::string, 4>> scratch_;  // one per paramFlow rule checked
  std::size_t next_ = 0;
};

}  // namespace floodgate::beast::detail
