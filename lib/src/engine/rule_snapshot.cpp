#include "engine/rule_snapshot.hpp"

#include "node/node_registry.hpp"

#include <algorithm>
#include <bit>
#include <map>

namespace floodgate::detail {

const resource_rules* rule_snapshot::find_and_hint(node::cluster_node& resource) const noexcept {
  const resource_rules* r = find(resource.hash(), resource.name());
  const std::uint64_t at = r == nullptr ? 0 : std::uint64_t{r->position} + 1;
  if (at <= hint_position_mask) {
    resource.set_rules_hint(((version & hint_version_mask) << hint_position_bits) | at);
  }
  return r;
}

const resource_rules* rule_snapshot::find(std::uint64_t hash,
                                          std::string_view name) const noexcept {
  if (index.empty()) {
    return nullptr;
  }
  const std::size_t mask = index.size() - 1;
  for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
    const std::int32_t at = index[i];
    if (at < 0) {
      return nullptr;
    }
    const auto& r = *resources[static_cast<std::size_t>(at)];
    if (r.hash == hash && r.resource == name) {
      return &r;
    }
  }
}

namespace {

template <class Rule>
using grouped = std::map<std::string, std::vector<indexed_rule<Rule>>, std::less<>>;

template <class Rule>
grouped<Rule> group_by_resource(const std::vector<Rule>& rules) {
  grouped<Rule> out;
  for (std::size_t i = 0; i < rules.size(); ++i) {
    out[rules[i].resource].push_back({rules[i], static_cast<std::int32_t>(i)});
  }
  return out;
}

int stage_order(stage s) {
  switch (s) {
    case stage::authority:
      return slot_order::authority;
    case stage::system:
      return slot_order::system;
    case stage::param_flow:
      return slot_order::param_flow;
    case stage::flow:
      return slot_order::flow;
    case stage::degrade:
      return slot_order::degrade;
    case stage::end:
      break;
  }
  return 1 << 30;
}

}  // namespace

std::unique_ptr<rule_snapshot> build_snapshot(const snapshot_inputs& in) {
  auto snap = std::make_unique<rule_snapshot>();
  snap->rules = in.rules;
  snap->version = in.version;

  const auto flow = group_by_resource(in.rules.flow);
  const auto degrade = group_by_resource(in.rules.degrade);
  const auto authority = group_by_resource(in.rules.authority);
  const auto param = group_by_resource(in.rules.param_flow);
  const auto hot_keys = group_by_resource(in.rules.hot_keys);

  std::map<std::string, resource_rules*, std::less<>> by_name;
  auto slot_for = [&](const std::string& name) -> resource_rules& {
    auto it = by_name.find(name);
    if (it != by_name.end()) {
      return *it->second;
    }
    auto r = std::make_unique<resource_rules>();
    r->resource = name;
    r->hash = node::hash_name(name);
    r->position = static_cast<std::uint32_t>(snap->resources.size());
    auto* raw = r.get();
    snap->resources.push_back(std::move(r));
    by_name.emplace(name, raw);
    return *raw;
  };
  auto previous_of = [&](const std::string& name) -> const resource_rules* {
    return in.previous != nullptr ? in.previous->find(node::hash_name(name), name) : nullptr;
  };

  for (const auto& [name, rules] : authority) {
    slot_for(name).authority = resource_authority::build(rules);
  }
  for (const auto& [name, rules] : param) {
    const auto* prev = previous_of(name);
    slot_for(name).param = resource_param_rules::build(rules, prev ? prev->param.get() : nullptr,
                                                       in.track_param_flow_values);
  }
  for (const auto& [name, rules] : hot_keys) {
    const auto* prev = previous_of(name);
    slot_for(name).hot_keys =
        resource_hot_keys::build(rules, prev ? prev->hot_keys.get() : nullptr);
  }
  for (const auto& [name, rules] : flow) {
    const auto* prev = previous_of(name);
    slot_for(name).flow =
        resource_flow_rules::build(rules, prev ? prev->flow.get() : nullptr, in.nodes, in.now_ms);
  }
  for (const auto& [name, rules] : degrade) {
    const auto* prev = previous_of(name);
    slot_for(name).degrade =
        resource_breakers::build(rules, prev ? prev->degrade.get() : nullptr, in.observers);
  }

  const std::size_t slots = std::bit_ceil(std::max<std::size_t>(snap->resources.size() * 2, 8));
  snap->index.assign(slots, -1);
  for (std::size_t i = 0; i < snap->resources.size(); ++i) {
    for (std::size_t j = snap->resources[i]->hash & (slots - 1);; j = (j + 1) & (slots - 1)) {
      if (snap->index[j] < 0) {
        snap->index[j] = static_cast<std::int32_t>(i);
        break;
      }
    }
  }

  if (!in.rules.system.empty()) {
    std::vector<indexed_rule<system_rule>> sys;
    for (std::size_t i = 0; i < in.rules.system.size(); ++i) {
      sys.push_back({in.rules.system[i], static_cast<std::int32_t>(i)});
    }
    snap->system = system_guard::build(std::move(sys), in.system_status);
  }

  snap->user_slots = in.user_slots;
  std::stable_sort(snap->user_slots.begin(), snap->user_slots.end(),
                   [](const auto& a, const auto& b) { return a->order() < b->order(); });
  for (std::size_t k = 0; k < stage_count; ++k) {
    const int limit = stage_order(static_cast<stage>(k));
    std::size_t n = 0;
    while (n < snap->user_slots.size() && snap->user_slots[n]->order() < limit) {
      ++n;
    }
    snap->first_slot[k] = static_cast<std::uint16_t>(n);
  }
  return snap;
}

}  // namespace floodgate::detail
