// The degrade slot: every circuit breaker of a resource, checked in rule order.
#include "degrade/degrade_slot.hpp"

#include "degrade/adaptive_breaker.hpp"
#include "degrade/circuit_breaker_impl.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
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
  // One breaker of either kind, in rule order.
  struct member {
    std::shared_ptr<circuit_breaker> owner;
    detail::circuit_breaker_impl* binary = nullptr;  // exactly one of these two is set
    detail::adaptive_breaker* adaptive = nullptr;
    std::int32_t rule_index = 0;
  };
  std::vector<member> members;

  void revert_probes(std::uint32_t bits) const noexcept {
    for (std::size_t i = 0; i < members.size() && bits != 0; ++i) {
      const std::uint32_t bit = probe_bit(i);
      if ((bits & bit) != 0 && members[i].binary != nullptr) {
        members[i].binary->revert_probe();
        if (i < probe_bits - 1) {
          bits &= ~bit;
        }
      }
    }
  }
};

resource_breakers::resource_breakers(std::unique_ptr<impl> p) : impl_(std::move(p)) {
  for (const impl::member& m : impl_->members) {
    if (m.binary != nullptr) {
      list_.push_back(m.binary);
    } else {
      adaptive_list_.push_back(m.adaptive);
    }
  }
}
resource_breakers::~resource_breakers() = default;

std::unique_ptr<resource_breakers> resource_breakers::build(
    std::vector<indexed_rule<degrade_rule>> rules, const resource_breakers* previous,
    const breaker_observers& observers) {
  auto p = std::make_unique<impl>();
  p->members.reserve(rules.size());
  const std::vector<impl::member> no_members;
  const std::vector<impl::member>& before = previous ? previous->impl_->members : no_members;
  // An equal rule keeps its breaker, state and all (as Sentinel keeps its CircuitBreaker); a
  // changed rule's transitions go on from those of the breaker it replaces under its label.
  const rule_succession follows = succeed_rules(
      rules.size(), before.size(),
      [&](std::size_t k, std::size_t i) { return before[i].owner->rule() == rules[k].rule; },
      [&](std::size_t k, std::size_t i) {
        return rules[k].rule.grade != degrade_grade::adaptive && before[i].binary != nullptr &&
               same_label(rules[k].rule.name, rules[k].index, before[i].owner->rule().name,
                          before[i].rule_index);
      });
  for (std::size_t k = 0; k < rules.size(); ++k) {
    indexed_rule<degrade_rule>& r = rules[k];
    impl::member m;
    if (follows.kept[k]) {
      m = before[*follows.kept[k]];
    } else if (r.rule.grade == degrade_grade::adaptive) {
      auto b = std::make_shared<detail::adaptive_breaker>(std::move(r.rule),
                                                          detail::adaptive_breaker::fresh_seed());
      m.adaptive = b.get();
      m.owner = std::move(b);
    } else {
      auto b = std::make_shared<detail::circuit_breaker_impl>(std::move(r.rule), observers);
      if (follows.predecessor[k]) b->carry_transitions(*before[*follows.predecessor[k]].binary);
      m.binary = b.get();
      m.owner = std::move(b);
    }
    m.rule_index = r.index;
    p->members.push_back(std::move(m));
  }
  return std::unique_ptr<resource_breakers>(new resource_breakers(std::move(p)));
}

slot_verdict resource_breakers::check(const check_context& ctx,
                                      entry_tokens& tokens) const noexcept {
  using kind = detail::circuit_breaker_impl::admission::kind;
  std::uint32_t won = 0;
  const auto& members = impl_->members;
  for (std::size_t i = 0; i < members.size(); ++i) {
    std::int64_t retry_after_ms = 0;
    if (members[i].adaptive != nullptr) {
      if (members[i].adaptive->try_pass(ctx.now_ms)) {
        continue;
      }
      retry_after_ms = detail::adaptive_breaker::retry_after_ms;
    } else {
      const auto a = members[i].binary->try_pass(ctx.now_ms);
      if (a.outcome == kind::probe) {
        won |= probe_bit(i);
      }
      if (a.outcome != kind::block) {
        continue;
      }
      retry_after_ms = a.retry_after_ms;
    }
    impl_->revert_probes(won);  // probes won above were blocked by this breaker
    block_info b;
    b.reason = block_reason::degrade;
    b.rule_index = members[i].rule_index;
    b.retry_after = std::chrono::milliseconds{retry_after_ms};
    return slot_verdict::blocked(b);
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
  for (const impl::member& m : impl_->members) {
    if (m.adaptive != nullptr) {
      m.adaptive->on_request_complete(ctx.now_ms, ctx.error);
    } else {
      m.binary->on_request_complete(ctx.now_ms, ctx.rt_ms, ctx.error);
    }
  }
}

void resource_breakers::for_each(
    const std::function<void(const circuit_breaker&, std::int32_t)>& f) const {
  for (const impl::member& m : impl_->members) {
    f(*m.owner, m.rule_index);
  }
}

}  // namespace floodgate
