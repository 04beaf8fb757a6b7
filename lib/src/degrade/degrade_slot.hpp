// The degrade slot: a resource's circuit breakers.
#pragma once

#include <floodgate/chain/slot.hpp>
#include <floodgate/rules/degrade_rule.hpp>
#include "rules/indexed_rule.hpp"

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

namespace floodgate {

class circuit_breaker;
class breaker_observers;

namespace detail {
class adaptive_breaker;
class circuit_breaker_impl;
}  // namespace detail

/** The circuit breakers of one resource, in rule order (Sentinel's DegradeSlot): binary ones
    and adaptive ones (grade adaptive) alike.

    @par Thread Safety
    check(), on_blocked_later() and on_exit() are lock-free, never allocate and may run on any
    number of threads; build() and for_each() are control-plane calls.
*/

class resource_breakers {
 public:
  /** Builds the breakers of `rules` (all valid, of one resource). A rule equal to one of
      `previous` keeps that breaker object — its state and statistics carry over a reload, as
      Sentinel's DegradeRuleManager does; other rules start CLOSED with an empty window.
      `observers` must outlive every breaker. */
  static std::unique_ptr<resource_breakers> build(std::vector<indexed_rule<degrade_rule>> rules,
                                                  const resource_breakers* previous,
                                                  const breaker_observers& observers);
  ~resource_breakers();

  /** Asks every breaker in turn; the first that refuses blocks the entry (reason `degrade`, its
      rule index, `retry_after` = time until its next probe, at least 1 ms; 1 s while a probe is
      running, and 1 s for a request an adaptive breaker drops). Half-open probes won are recorded in `tokens.breaker_probe`; if a later breaker
      blocks, they are reverted here. */
  slot_verdict check(const check_context& ctx, entry_tokens& tokens) const noexcept;
  /// A later slot blocked the entry: its half-open probes go back to OPEN (probe time kept).
  void on_blocked_later(const check_context& ctx, entry_tokens& tokens) const noexcept;
  /// A passed entry completed (after the statistics): every breaker records `ctx.rt_ms` and
  /// `ctx.error` and may change state.
  void on_exit(const exit_context& ctx, entry_tokens& tokens) const noexcept;

  /// Calls `f(breaker, rule_index)` for each breaker, in rule order.
  void for_each(const std::function<void(const circuit_breaker&, std::int32_t)>& f) const;

  /// The binary breakers in rule order, for the engine's inline paths (the same objects check()
  /// and on_exit() use; alive as long as this).
  const std::vector<detail::circuit_breaker_impl*>& list() const noexcept { return list_; }
  /// The adaptive breakers in rule order, likewise. While there is one, check() always runs.
  const std::vector<detail::adaptive_breaker*>& adaptive_list() const noexcept {
    return adaptive_list_;
  }

  struct impl;

 private:
  explicit resource_breakers(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
  std::vector<detail::circuit_breaker_impl*> list_;
  std::vector<detail::adaptive_breaker*> adaptive_list_;
};

}  // namespace floodgate
