// The authority slot: origin white / black lists.
#pragma once

#include <floodgate/authority/authority_rule.hpp>
#include <floodgate/core/slot.hpp>
#include <floodgate/rules/indexed_rule.hpp>
#include <floodgate/rules/rule_set.hpp>

#include <memory>
#include <string_view>
#include <vector>

namespace floodgate {

void validate(const authority_rule& rule, std::string_view path, std::vector<rule_error>& errors);

/// The authority rules of one resource.
class resource_authority {
 public:
  static std::unique_ptr<resource_authority> build(
      std::vector<indexed_rule<authority_rule>> rules);
  ~resource_authority();

  slot_verdict check(const check_context& ctx) const noexcept;

  struct impl;

 private:
  explicit resource_authority(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace floodgate
