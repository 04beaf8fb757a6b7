#include "param/resource_hot_keys.hpp"

#include "param/parameter_of.hpp"

namespace floodgate {

std::unique_ptr<resource_hot_keys> resource_hot_keys::build(
    std::vector<indexed_rule<hot_keys_rule>> rules, const resource_hot_keys* previous) {
  auto out = std::make_unique<resource_hot_keys>();
  out->rules_.reserve(rules.size());
  const std::vector<tracked> none;
  const std::vector<tracked>& before = previous != nullptr ? previous->rules_ : none;
  // An equal rule keeps its tracker (each at most once).
  std::vector<bool> taken(before.size());
  std::vector<std::shared_ptr<param_detail::hot_key_tracker>> kept(rules.size());
  for (std::size_t k = 0; k < rules.size(); ++k) {
    for (std::size_t i = 0; i < before.size() && kept[k] == nullptr; ++i) {
      if (!taken[i] && before[i].rule == rules[k].rule) {
        taken[i] = true;
        kept[k] = before[i].tracker;
      }
    }
  }
  for (std::size_t k = 0; k < rules.size(); ++k) {
    auto& [rule, index] = rules[k];
    std::shared_ptr<param_detail::hot_key_tracker> tracker = std::move(kept[k]);
    if (tracker == nullptr) {
      tracker = std::make_shared<param_detail::hot_key_tracker>(
          param_detail::value_hasher(param_detail::random_seed()),
          std::int64_t{rule.window_sec} * 1000, rule.top, rule.threshold);
      // A changed rule's events go on from those of the tracker it replaces under the same
      // label (its name, or its place in the file), unless an equal rule kept that one.
      for (std::size_t i = 0; i < before.size(); ++i) {
        if (!taken[i] && same_label(rule.name, index, before[i].rule.name, before[i].index)) {
          tracker->carry_events(*before[i].tracker);
          break;
        }
      }
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
