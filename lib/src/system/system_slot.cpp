// TEMPORARY pass-through until the system-rule work lands.
#include <floodgate/system/system_slot.hpp>

namespace floodgate {
struct system_guard::impl {};
void validate(const system_rule&, std::string_view, std::vector<rule_error>&) {}
system_guard::system_guard(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
system_guard::~system_guard() = default;
std::unique_ptr<system_guard> system_guard::build(std::vector<indexed_rule<system_rule>>,
                                                  std::shared_ptr<const system_status_source>) {
  return std::unique_ptr<system_guard>(new system_guard(std::make_unique<impl>()));
}
slot_verdict system_guard::check(const check_context&) const noexcept {
  return slot_verdict::pass();
}
std::shared_ptr<system_status_source> process_system_status() { return nullptr; }
}  // namespace floodgate
