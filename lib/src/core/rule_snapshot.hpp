// The immutable, compiled form of a rule set that requests read.
#pragma once

#include <floodgate/authority/authority_slot.hpp>
#include <floodgate/core/slot.hpp>
#include <floodgate/degrade/circuit_breaker.hpp>
#include <floodgate/degrade/degrade_slot.hpp>
#include <floodgate/flow/flow_slot.hpp>
#include <floodgate/param/param_slot.hpp>
#include <floodgate/rules/rule_set.hpp>
#include <floodgate/system/system_slot.hpp>

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
  std::unique_ptr<resource_authority> authority;
  std::unique_ptr<resource_param_rules> param;
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
};

struct snapshot_inputs {
  const rule_set& rules;
  const rule_snapshot* previous;
  std::vector<std::shared_ptr<slot>> user_slots;
  const breaker_observers& observers;
  std::shared_ptr<const system_status_source> system_status;
  std::uint64_t version;
};

/// Compiles a validated rule set, carrying state over from `previous` for unchanged rules.
std::unique_ptr<rule_snapshot> build_snapshot(const snapshot_inputs& in);

}  // namespace floodgate::detail
