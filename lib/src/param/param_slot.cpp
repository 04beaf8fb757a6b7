// Hot-parameter rules of one resource: validation, build with state carried over, and checks.
#include "param/param_slot.hpp"

#include "param/param_rule.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>

namespace floodgate {

namespace {

/// Releases the per-value in-flight counters the entry holds beyond the first `keep`.
void release_held(entry_tokens& tokens, std::uint8_t keep) noexcept {
  while (tokens.param_held_count > keep) {
    void* held = tokens.param_held[--tokens.param_held_count];
    static_cast<std::atomic<std::int32_t>*>(held)->fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace

struct resource_param_rules::impl {
  std::vector<param_detail::param_rule> rules;
};

resource_param_rules::resource_param_rules(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
resource_param_rules::~resource_param_rules() = default;

std::unique_ptr<resource_param_rules> resource_param_rules::build(
    std::vector<indexed_rule<param_flow_rule>> rules, const resource_param_rules* previous,
    bool track_values) {
  auto p = std::make_unique<impl>();
  p->rules.reserve(rules.size());
  // An unchanged rule keeps its per-value state; a new or changed rule starts empty, its
  // hot-key events going on from those of the rule it replaces under its label.
  const std::vector<param_detail::param_rule> none;
  const auto& before = previous != nullptr ? previous->impl_->rules : none;
  const rule_succession follows = succeed_rules(
      rules.size(), before.size(),
      [&](std::size_t k, std::size_t i) {
        return before[i].rule() == rules[k].rule &&
               (before[i].state()->tracker != nullptr) == track_values;
      },
      [&](std::size_t k, std::size_t i) {
        return track_values && before[i].state()->tracker != nullptr &&
               same_label(rules[k].rule.name, rules[k].index, before[i].rule().name,
                          before[i].index());
      });
  for (std::size_t k = 0; k < rules.size(); ++k) {
    auto& [rule, index] = rules[k];
    std::shared_ptr<param_detail::rule_state> state;
    if (follows.kept[k]) {
      state = before[*follows.kept[k]].state();
    } else {
      state = std::make_shared<param_detail::rule_state>(rule, track_values);
      if (follows.predecessor[k]) {
        state->tracker->carry_events(*before[*follows.predecessor[k]].state()->tracker);
      }
    }
    p->rules.emplace_back(rule, index, std::move(state));
  }
  return std::unique_ptr<resource_param_rules>(new resource_param_rules(std::move(p)));
}

slot_verdict resource_param_rules::check(const check_context& ctx,
                                         entry_tokens& tokens) const noexcept {
  const std::uint8_t held_before = tokens.param_held_count;
  std::int64_t wait_ns = 0;
  for (const auto& rule : impl_->rules) {
    param_detail::value_room room;
    const param_value* value = rule.value_of(ctx, room);
    if (value == nullptr) continue;
    const auto d = rule.check(ctx, *value, tokens);
    if (d.outcome == slot_verdict::kind::pass) continue;
    if (d.outcome == slot_verdict::kind::block) {
      // The engine only tells slots before the blocking one; undo this slot's own counts.
      release_held(tokens, held_before);
      return rule.blocked(*value, d.value);
    }
    wait_ns = std::max(wait_ns, d.value);  // the latest of the queues, as in flow_slot.cpp
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

void resource_param_rules::for_each_tracker(
    const std::function<void(const param_flow_rule&, std::int32_t,
                             const param_detail::hot_key_tracker&)>& f) const {
  for (const auto& rule : impl_->rules) {
    if (rule.state()->tracker != nullptr) f(rule.rule(), rule.index(), *rule.state()->tracker);
  }
}

bool resource_param_rules::is_hot(const param_value& value, std::int64_t now_ms) const noexcept {
  char buffer[param_detail::integer_text_size];
  const std::string_view text = param_detail::value_text(value, buffer);
  for (const auto& rule : impl_->rules) {
    const auto& tracker = rule.state()->tracker;
    if (tracker != nullptr && tracker->is_hot(text, now_ms)) return true;
  }
  return false;
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
