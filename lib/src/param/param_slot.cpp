// Hot-parameter rules of one resource: validation, build with state carried over, and checks.
#include <floodgate/param/param_slot.hpp>

#include "param/param_rule.hpp"

#include <atomic>
#include <cmath>
#include <string>

namespace floodgate {

namespace {

bool non_negative(double v) noexcept { return v >= 0 && std::isfinite(v); }

/// Releases the per-value in-flight counters the entry holds beyond the first `keep`.
void release_held(entry_tokens& tokens, std::uint8_t keep) noexcept {
  while (tokens.param_held_count > keep) {
    void* held = tokens.param_held[--tokens.param_held_count];
    static_cast<std::atomic<std::int32_t>*>(held)->fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace

void validate(const param_flow_rule& rule, std::string_view path, std::vector<rule_error>& errors) {
  const std::string p(path);
  if (rule.resource.empty()) {
    errors.push_back({p + ".resource", "must not be empty"});
  }
  if (rule.param && rule.param_idx) {
    errors.push_back({p + ".paramIdx", "must not be set together with param"});
  } else if (!rule.param && !rule.param_idx) {
    errors.push_back({p + ".param", "one of param and paramIdx is required"});
  }
  if (rule.param && rule.param->name.empty() &&
      (rule.param->from == param_source::header || rule.param->from == param_source::query)) {
    errors.push_back({p + ".param.name", "is required for header and query"});
  }
  if (!non_negative(rule.count)) {
    errors.push_back({p + ".count", "must be >= 0"});
  }
  if (rule.burst_count < 0) {
    errors.push_back({p + ".burstCount", "must be >= 0"});
  }
  if (rule.duration_in_sec <= 0) {
    errors.push_back({p + ".durationInSec", "must be > 0"});
  }
  if (rule.behavior != control_behavior::reject && rule.behavior != control_behavior::throttling) {
    errors.push_back({p + ".controlBehavior", "must be reject or throttling"});
  }
  if (rule.max_queueing_time_ms < 0) {
    errors.push_back({p + ".maxQueueingTimeMs", "must be >= 0"});
  }
  for (std::size_t i = 0; i < rule.items.size(); ++i) {
    if (!non_negative(rule.items[i].count)) {
      errors.push_back({p + ".items[" + std::to_string(i) + "].count", "must be >= 0"});
    }
  }
}

struct resource_param_rules::impl {
  std::vector<param_detail::param_rule> rules;
};

resource_param_rules::resource_param_rules(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
resource_param_rules::~resource_param_rules() = default;

std::unique_ptr<resource_param_rules> resource_param_rules::build(
    std::vector<indexed_rule<param_flow_rule>> rules, const resource_param_rules* previous) {
  auto p = std::make_unique<impl>();
  p->rules.reserve(rules.size());
  // An unchanged rule keeps its per-value state (each previous state is taken at most once);
  // a new or changed rule starts empty.
  std::vector<bool> taken(previous != nullptr ? previous->impl_->rules.size() : 0);
  for (auto& [rule, index] : rules) {
    std::shared_ptr<param_detail::rule_state> state;
    for (std::size_t i = 0; i < taken.size() && state == nullptr; ++i) {
      const auto& old = previous->impl_->rules[i];
      if (!taken[i] && old.rule() == rule) {
        taken[i] = true;
        state = old.state();
      }
    }
    if (state == nullptr) state = std::make_shared<param_detail::rule_state>(rule);
    p->rules.emplace_back(rule, index, std::move(state));
  }
  return std::unique_ptr<resource_param_rules>(new resource_param_rules(std::move(p)));
}

slot_verdict resource_param_rules::check(const check_context& ctx,
                                         entry_tokens& tokens) const noexcept {
  const std::uint8_t held_before = tokens.param_held_count;
  std::int64_t wait_ns = 0;
  for (const auto& rule : impl_->rules) {
    param_detail::param_rule::value_room room;
    const param_value* value = rule.value_of(ctx, room);
    if (value == nullptr) continue;
    const auto d = rule.check(ctx, *value, tokens);
    if (d.outcome == slot_verdict::kind::pass) continue;
    if (d.outcome == slot_verdict::kind::block) {
      // The engine only tells slots before the blocking one; undo this slot's own counts.
      release_held(tokens, held_before);
      return rule.blocked(*value, d.value);
    }
    wait_ns += d.value;  // throttling rules queue one after another
  }
  if (wait_ns > 0) return slot_verdict::wait(wait_ns);
  return slot_verdict::pass();
}

void resource_param_rules::on_blocked_later(const check_context&,
                                            entry_tokens& tokens) const noexcept {
  release_held(tokens, 0);
}

void resource_param_rules::on_exit(const exit_context&, entry_tokens& tokens) const noexcept {
  release_held(tokens, 0);
}

std::size_t resource_param_rules::tracked_values() const noexcept {
  std::size_t n = 0;
  for (const auto& rule : impl_->rules) n += rule.state()->table.size();
  return n;
}

std::size_t resource_param_rules::value_capacity() const noexcept {
  std::size_t n = 0;
  for (const auto& rule : impl_->rules) n += rule.state()->table.capacity();
  return n;
}

}  // namespace floodgate
