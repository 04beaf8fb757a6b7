// TEMPORARY pass-through until the param-flow work lands.
#include <floodgate/param/param_slot.hpp>

namespace floodgate {
struct resource_param_rules::impl {};
void validate(const param_flow_rule&, std::string_view, std::vector<rule_error>&) {}
resource_param_rules::resource_param_rules(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
resource_param_rules::~resource_param_rules() = default;
std::unique_ptr<resource_param_rules> resource_param_rules::build(
    std::vector<indexed_rule<param_flow_rule>>, const resource_param_rules*) {
  return std::unique_ptr<resource_param_rules>(new resource_param_rules(std::make_unique<impl>()));
}
slot_verdict resource_param_rules::check(const check_context&, entry_tokens&) const noexcept {
  return slot_verdict::pass();
}
void resource_param_rules::on_blocked_later(const check_context&, entry_tokens&) const noexcept {}
void resource_param_rules::on_exit(const exit_context&, entry_tokens&) const noexcept {}
}  // namespace floodgate
