// Authority rules: an origin white or black list per resource (Sentinel's AuthorityRuleChecker).
#include "authority/authority_slot.hpp"

#include <algorithm>
#include <string>

namespace floodgate {

namespace {

std::string_view trim(std::string_view s) noexcept {
  const auto is_space = [](char c) { return c == ' ' || c == '\t'; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

/// The non-empty, trimmed names of a comma-separated origin list.
std::vector<std::string> split_origins(std::string_view list) {
  std::vector<std::string> out;
  while (true) {
    const auto comma = list.find(',');
    const auto name = trim(list.substr(0, comma));
    if (!name.empty()) out.emplace_back(name);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace

struct resource_authority::impl {
  authority_strategy strategy = authority_strategy::white;
  std::int32_t index = -1;
  std::vector<std::string> origins;  // parsed once: check() only compares

  bool contains(std::string_view origin) const noexcept {
    return std::any_of(origins.begin(), origins.end(),
                       [&](const std::string& o) { return o == origin; });
  }
};

resource_authority::resource_authority(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
resource_authority::~resource_authority() = default;

std::unique_ptr<resource_authority> resource_authority::build(
    std::vector<indexed_rule<authority_rule>> rules) {
  auto p = std::make_unique<impl>();
  // Sentinel keeps only the first rule of a resource; the rule-file layer reports the others.
  if (!rules.empty()) {
    const auto& first = rules.front();
    p->strategy = first.rule.strategy;
    p->index = first.index;
    p->origins = split_origins(first.rule.limit_app);
  }
  return std::unique_ptr<resource_authority>(new resource_authority(std::move(p)));
}

slot_verdict resource_authority::check(const check_context& ctx) const noexcept {
  // An empty origin passes whatever the list says (Sentinel: the caller is unknown).
  if (ctx.origin.empty() || impl_->index < 0) {
    return slot_verdict::pass();
  }
  const bool listed = impl_->contains(ctx.origin);
  const bool white = impl_->strategy == authority_strategy::white;
  if (white != listed) {
    block_info b;
    b.reason = block_reason::authority;
    b.rule_index = impl_->index;
    b.subject = param_value(ctx.origin);
    return slot_verdict::blocked(b);
  }
  return slot_verdict::pass();
}

}  // namespace floodgate
