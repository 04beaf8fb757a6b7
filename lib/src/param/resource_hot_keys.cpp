#include "param/resource_hot_keys.hpp"

#include "param/parameter_of.hpp"

namespace floodgate {

std::unique_ptr<resource_hot_keys> resource_hot_keys::build(
    std::vector<indexed_rule<hot_keys_rule>> rules, const resource_hot_keys* previous) {
  auto out = std::make_unique<resource_hot_keys>();
  out->rules_.reserve(rules.size());
  const std::vector<tracked> none;
  const std::vector<tracked>& before = previous != nullptr ? previous->rules_ : none;
  // An equal rule keeps its tracker; a changed rule's events go on from those of the tracker it
  // replaces under its label.
  const rule_succession follows = succeed_rules(
      rules.size(), before.size(),
      [&](std::size_t k, std::size_t i) { return before[i].rule == rules[k].rule; },
      [&](std::size_t k, std::size_t i) {
        return same_label(rules[k].rule.name, rules[k].index, before[i].rule.name,
                          before[i].index);
      });
  for (std::size_t k = 0; k < rules.size(); ++k) {
    auto& [rule, index] = rules[k];
    std::shared_ptr<param_detail::hot_key_tracker> tracker;
    if (follows.kept[k]) {
      tracker = before[*follows.kept[k]].tracker;
    } else {
      tracker = std::make_shared<param_detail::hot_key_tracker>(
          param_detail::value_hasher(param_detail::random_seed()),
          std::int64_t{rule.window_sec} * 1000, rule.top, rule.threshold);
      if (follows.predecessor[k]) tracker->carry_events(*before[*follows.predecessor[k]].tracker);
    }
    out->rules_.push_back({std::move(rule), index, std::move(tracker)});
  }
  return out;
}

void resource_hot_keys::record(const check_context& ctx) const noexcept {
  for (const tracked& t : rules_) {
    param_detail::value_room room;
    const param_value* value = param_detail::parameter_of(ctx, t.rule.param, t.rule.param_idx, room);
    if (value == nullptr) continue;
    char buffer[param_detail::integer_text_size];
    const std::string_view text = param_detail::value_text(*value, buffer);
    t.tracker->record(t.tracker->hasher()(text), text, ctx.now_ms);
  }
}

bool resource_hot_keys::is_hot(const param_value& value, std::int64_t now_ms) const noexcept {
  char buffer[param_detail::integer_text_size];
  const std::string_view text = param_detail::value_text(value, buffer);
  for (const tracked& t : rules_) {
    if (t.tracker->is_hot(text, now_ms)) return true;
  }
  return false;
}

void resource_hot_keys::for_each_tracker(
    const std::function<void(const hot_keys_rule&, std::int32_t,
                             const param_detail::hot_key_tracker&)>& f) const {
  for (const tracked& t : rules_) f(t.rule, t.index, *t.tracker);
}

}  // namespace floodgate
