// The system slot: adaptive protection of all inbound traffic.
#pragma once

#include <floodgate/core/slot.hpp>
#include <floodgate/rules/indexed_rule.hpp>
#include <floodgate/rules/rule_set.hpp>
#include <floodgate/system/system_rule.hpp>
#include <floodgate/system/system_status.hpp>

#include <memory>
#include <string_view>
#include <vector>

namespace floodgate {

void validate(const system_rule& rule, std::string_view path, std::vector<rule_error>& errors);

/// The merged system thresholds (min over all rules) and the readings they are checked against.
class system_guard {
 public:
  static std::unique_ptr<system_guard> build(std::vector<indexed_rule<system_rule>> rules,
                                             std::shared_ptr<const system_status_source> status);
  ~system_guard();

  /// Checks an inbound entry against the global inbound node; outbound entries always pass.
  slot_verdict check(const check_context& ctx) const noexcept;

  struct impl;

 private:
  explicit system_guard(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace floodgate
