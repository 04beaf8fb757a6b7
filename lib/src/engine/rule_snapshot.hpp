// The immutable, compiled form of a rule set that requests read.
#pragma once

#include "authority/authority_slot.hpp"
#include <floodgate/chain/slot.hpp>
#include <floodgate/degrade/circuit_breaker.hpp>
#include "degrade/degrade_slot.hpp"
#include "flow/flow_slot.hpp"
#include "node/cluster_node.hpp"
#include "param/param_slot.hpp"
#include "param/resource_hot_keys.hpp"
#include <floodgate/rules/rule_set.hpp>
#include "system/system_slot.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace floodgate::detail {

/// The compiled rules of one resource; any part may be null (no rules of that type).
struct resource_rules {
  std::string resource;
  std::uint64_t hash = 0;
  std::uint32_t position = 0;  ///< index in rule_snapshot::resources
  std::unique_ptr<resource_authority> authority;
  std::unique_ptr<resource_param_rules> param;
  std::unique_ptr<resource_hot_keys> hot_keys;
  std::unique_ptr<resource_flow_rules> flow;
  std::unique_ptr<resource_breakers> degrade;
};

/// Stages of the chain that user slots are placed around.
enum class stage : std::uint8_t { authority, system, param_flow, flow, degrade, end };
inline constexpr std::size_t stage_count = 6;

/** Everything a request needs from the rules in force: built once per load, never modified
    (module state objects inside are atomics), published through an rcu_cell. */
struct rule_snapshot {
  rule_set rules;
  std::uint64_t version = 0;
  std::vector<std::unique_ptr<resource_rules>> resources;
  std::vector<std::int32_t> index;  // open addressing over `resources`, -1 = empty
  std::unique_ptr<system_guard> system;
  std::vector<std::shared_ptr<slot>> user_slots;  // sorted by order
  /// user_slots[first_slot[k - 1] .. first_slot[k]) run just before stage k.
  std::array<std::uint16_t, stage_count> first_slot{};

  const resource_rules* find(std::uint64_t hash, std::string_view name) const noexcept;

  /** The rules of `resource`, through the hint the resource's cluster node keeps of its last
      lookup: one word packing (version, position + 1), so a hint from another snapshot never
      matches. Only a miss hashes and probes, then refreshes the hint. */
  const resource_rules* rules_for(node::cluster_node& resource) const noexcept {
    const std::uint64_t hint = resource.rules_hint();
    if ((hint >> hint_position_bits) == (version & hint_version_mask)) [[likely]] {
      const std::uint64_t at = hint & hint_position_mask;
      return at == 0 ? nullptr : resources[at - 1].get();
    }
    return find_and_hint(resource);
  }

 private:
  static constexpr unsigned hint_position_bits = 24;
  static constexpr std::uint64_t hint_position_mask = (std::uint64_t{1} << hint_position_bits) - 1;
  static constexpr std::uint64_t hint_version_mask =
      (std::uint64_t{1} << (64 - hint_position_bits)) - 1;
  const resource_rules* find_and_hint(node::cluster_node& resource) const noexcept;
};

struct snapshot_inputs {
  const rule_set& rules;
  const rule_snapshot* previous;
  std::vector<std::shared_ptr<slot>> user_slots;
  const breaker_observers& observers;
  std::shared_ptr<const system_status_source> system_status;
  std::uint64_t version;
  /// The statistics tree and the time of the build: new rules start from the traffic under way.
  const node::node_registry* nodes = nullptr;
  std::int64_t now_ms = -1;
  bool track_param_flow_values = true;
};

/// Compiles a validated rule set, carrying state over from `previous` for unchanged rules.
std::unique_ptr<rule_snapshot> build_snapshot(const snapshot_inputs& in);

}  // namespace floodgate::detail
