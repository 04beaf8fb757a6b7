// TEMPORARY pass-through until the flow work lands.
#include <floodgate/flow/flow_slot.hpp>

namespace floodgate {

struct resource_flow_rules::impl {
  std::vector<indexed_rule<flow_rule>> rules;
};

void validate(const flow_rule&, std::string_view, std::vector<rule_error>&) {}

resource_flow_rules::resource_flow_rules(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
resource_flow_rules::~resource_flow_rules() = default;

std::unique_ptr<resource_flow_rules> resource_flow_rules::build(
    std::vector<indexed_rule<flow_rule>> rules, const resource_flow_rules*) {
  auto p = std::make_unique<impl>();
  p->rules = std::move(rules);
  return std::unique_ptr<resource_flow_rules>(new resource_flow_rules(std::move(p)));
}

slot_verdict resource_flow_rules::check(const check_context&, entry_tokens&) const noexcept {
  return slot_verdict::pass();
}
void resource_flow_rules::on_blocked_later(const check_context&, entry_tokens&) const noexcept {}
void resource_flow_rules::on_exit(const exit_context&, entry_tokens&) const noexcept {}

}  // namespace floodgate
