// The degrade slot: every circuit breaker of a resource, checked in rule order.
#include "degrade/degrade_slot.hpp"

#include "degrade/circuit_breaker_impl.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

namespace floodgate {

// A probe is remembered in entry_tokens::breaker_probe, one bit per breaker. Breakers past the
// 31st share the last bit: reverting it reverts every half-open breaker from the 31st on, which
// may cost another request's probe (one extra probe later) but never leaves a breaker HALF_OPEN
// with no probe running, which would block the resource for good.
namespace {

constexpr std::size_t probe_bits = 32;

std::uint32_t probe_bit(std::size_t i) noexcept {
  return std::uint32_t{1} << std::min(i, probe_bits - 1);
}

}  // namespace

struct resource_breakers::impl {
  std::vector<std::shared_ptr<detail::circuit_breaker_impl>> breakers;
  std::vector<std::int32_t> rule_index;  // parallel to breakers

  void revert_probes(std::uint32_t bits) const noexcept {
    for (std::size_t i = 0; i < breakers.size() && bits != 0; ++i) {
      const std::uint32_t bit = probe_bit(i);
      if ((bits & bit) != 0) {
        breakers[i]->revert_probe();
        if (i < probe_bits - 1) {
          bits &= ~bit;
        }
      }
    }
  }
};

resource_breakers::resource_breakers(std::unique_ptr<impl> p) : impl_(std::move(p)) {
  for (const auto& b : impl_->breakers) {
    list_.push_back(b.get());
  }
}
resource_breakers::~resource_breakers() = default;

std::unique_ptr<resource_breakers> resource_breakers::build(
    std::vector<indexed_rule<degrade_rule>> rules, const resource_breakers* previous,
    const breaker_observers& observers) {
  auto p = std::make_unique<impl>();
  p->breakers.reserve(rules.size());
  p->rule_index.reserve(rules.size());
  // Each previous breaker is reused at most once, so two equal rules keep two breakers.
  std::vector<bool> reused(previous ? previous->impl_->breakers.size() : 0, false);
  for (indexed_rule<degrade_rule>& r : rules) {
    std::shared_ptr<detail::circuit_breaker_impl> breaker;
    for (std::size_t i = 0; i < reused.size() && !breaker; ++i) {
      const auto& candidate = previous->impl_->breakers[i];
      if (!reused[i] && candidate->rule() == r.rule) {
        reused[i] = true;
        breaker =
            candidate;  // Sentinel keeps the CircuitBreaker of an equal rule: state carries over
      }
    }
    if (!breaker) {
      breaker = std::make_shared<detail::circuit_breaker_impl>(std::move(r.rule), observers);
    }
    p->breakers.push_back(std::move(breaker));
    p->rule_index.push_back(r.index);
  }
  return std::unique_ptr<resource_breakers>(new resource_breakers(std::move(p)));
}

slot_verdict resource_breakers::check(const check_context& ctx,
                                      entry_tokens& tokens) const noexcept {
  using kind = detail::circuit_breaker_impl::admission::kind;
  std::uint32_t won = 0;
  const auto& breakers = impl_->breakers;
  for (std::size_t i = 0; i < breakers.size(); ++i) {
    const auto a = breakers[i]->try_pass(ctx.now_ms);
    if (a.outcome == kind::probe) {
      won |= probe_bit(i);
    } else if (a.outcome == kind::block) {
      impl_->revert_probes(won);  // probes won above were blocked by this breaker
      block_info b;
      b.reason = block_reason::degrade;
      b.rule_index = impl_->rule_index[i];
      b.retry_after = std::chrono::milliseconds{a.retry_after_ms};
      return slot_verdict::blocked(b);
    }
  }
  tokens.breaker_probe |= won;
  return slot_verdict::pass();
}

void resource_breakers::on_blocked_later(const check_context&,
                                         entry_tokens& tokens) const noexcept {
  impl_->revert_probes(tokens.breaker_probe);
  tokens.breaker_probe = 0;
}

void resource_breakers::on_exit(const exit_context& ctx, entry_tokens&) const noexcept {
  for (const auto& breaker : impl_->breakers) {
    breaker->on_request_complete(ctx.now_ms, ctx.rt_ms, ctx.error);
  }
}

void resource_breakers::for_each(
    const std::function<void(const circuit_breaker&, std::int32_t)>& f) const {
  for (std::size_t i = 0; i < impl_->breakers.size(); ++i) {
    f(*impl_->breakers[i], impl_->rule_index[i]);
  }
}

}  // namespace floodgate
