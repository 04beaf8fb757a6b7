// The system slot: adaptive protection of all inbound traffic.
#pragma once

#include <floodgate/chain/slot.hpp>
#include "rules/indexed_rule.hpp"
#include <floodgate/rules/system_rule.hpp>
#include <floodgate/system/system_status.hpp>

#include <memory>
#include <string_view>
#include <vector>

namespace floodgate {

/** Checks a system rule: each threshold is -1 (off) or >= 0, and highestCpuUsage is at most 1.
    Appends `{path + ".qps", ...}` etc. for every problem. */
/** The merged system thresholds (min over all rules) and the readings they are checked against.

    Checks run in Sentinel's order — qps, thread, rt, load, cpu — and the first exceeded wins. High
    load blocks only when the BBR test fails too (in-flight > 1 and in-flight > maxSuccessQps ×
    minRt / 1000 on the inbound node). Blocks carry the limit that tripped, the index of the rule
    that set it, and a retry-after of 1 s.

    @par Thread Safety
    Immutable once built; check() is lock-free and may run on any number of threads.
*/
class system_guard {
 public:
  /** Merges `rules` (any rule with a threshold set turns checking on). `status` supplies load and
      CPU; when null, load and CPU thresholds never trip. */
  static std::unique_ptr<system_guard> build(std::vector<indexed_rule<system_rule>> rules,
                                             std::shared_ptr<const system_status_source> status);
  ~system_guard();

  /// Checks an inbound entry against the global inbound node; outbound entries always pass.
  slot_verdict check(const check_context& ctx) const noexcept;

  /// The thresholds in force: each field the smallest any rule sets, -1 when none does.
  system_rule merged() const noexcept;

  struct impl;

 private:
  explicit system_guard(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace floodgate
