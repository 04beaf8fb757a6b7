// The authority slot: origin white / black lists.
#pragma once

#include <floodgate/rules/authority_rule.hpp>
#include <floodgate/chain/slot.hpp>
#include "rules/indexed_rule.hpp"

#include <memory>
#include <string_view>
#include <vector>

namespace floodgate {

/** The authority rule of one resource: a white or black list of origins.

    As in Sentinel only the first rule of a resource applies. The list is split at commas and
    each name trimmed of surrounding spaces when built; origins then match names exactly. An empty
    origin always passes.

    @par Thread Safety
    Immutable once built; check() may run on any number of threads and never allocates.
*/
class resource_authority {
 public:
  /// Compiles the rules of one resource (in file order).
  static std::unique_ptr<resource_authority> build(std::vector<indexed_rule<authority_rule>> rules);
  ~resource_authority();

  /// Blocks (reason `authority`) an origin a white list lacks or a black list names.
  slot_verdict check(const check_context& ctx) const noexcept;

  struct impl;

 private:
  explicit resource_authority(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace floodgate
