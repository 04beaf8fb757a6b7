// A resource's nodes and a manual clock, and the check and exit contexts a rule slot sees,
// without the engine: for unit tests of the slots, their controllers and node selection.
#pragma once

#include <floodgate/chain/clock.hpp>
#include <floodgate/chain/slot.hpp>
#include "flow/flow_request.hpp"
#include "node/node_registry.hpp"

#include <cstdint>
#include <span>
#include <string_view>

namespace floodgate::test_support {

/// One resource `res` in context `ctx`, its nodes, and a manual clock.
struct slot_harness {
  manual_clock time{1'000'000};
  node::node_registry registry{node::registry_limits{}, stat::window_config{}};
  node::cluster_node& cluster = *registry.resource("res");
  node::entrance_node& entrance = *registry.entrance("ctx");
  node::default_node& node = *registry.default_node_for(entrance, cluster, entrance.children());

  check_context check(std::string_view origin = {}, entry_type type = entry_type::inbound,
                      std::span<const param_value> args = {}, std::uint32_t acquire = 1,
                      param_extractor params = {}) {
    return check_context{time.now_ms(), time.now_ns(), time,     "res", "ctx",  origin,
                         type,          acquire,       false,    args,  params, cluster,
                         node,          nullptr,       registry, 500};
  }

  /// As check(), for a named context and an origin node (limitApp and chain selection).
  check_context check_in(std::string_view origin, std::string_view context_name,
                         node::origin_node* origin_node) {
    return check_context{time.now_ms(),
                         time.now_ns(),
                         time,
                         "res",
                         context_name,
                         origin,
                         entry_type::inbound,
                         1,
                         false,
                         {},
                         {},
                         cluster,
                         node,
                         origin_node,
                         registry,
                         500};
  }

  /// What a flow controller is asked, now.
  flow::flow_request request(std::uint32_t acquire = 1, bool prioritized = false) const {
    return {time.now_ms(), time.now_ns(), acquire, prioritized, 500};
  }
  /// The cluster node as a `default` direct rule sees it: exclusive to the rule.
  flow::selected_node cluster_exclusive() { return {&cluster, &cluster, nullptr, true}; }
  /// A node read the Sentinel way (check-then-act), e.g. an `other` rule's origin node.
  flow::selected_node shared(stat::statistic_node& n) { return {&n, &n, nullptr, false}; }
  /// Records `n` passes now on the cluster node (as the statistic slot would).
  void pass(std::uint32_t n = 1) { cluster.add_pass(time.now_ms(), n); }

  exit_context exit(std::int64_t rt_ms = 1, bool error = false) {
    return exit_context{time.now_ms(), time.now_ns(), time.now_ms() - rt_ms,
                        rt_ms,         error,         1,
                        cluster,       node,          nullptr};
  }

  /// What the statistic slot records for an inbound entry that passed: pass + in-flight.
  void record_inbound_pass(std::uint32_t n = 1) {
    registry.inbound().add_pass(time.now_ms(), n);
    registry.inbound().increase_concurrency();
  }

  /// What the statistic slot records when an inbound entry completes.
  void record_inbound_exit(std::int64_t rt_ms) {
    registry.inbound().add_rt_and_success(time.now_ms(), rt_ms, 1);
    registry.inbound().decrease_concurrency();
  }
};

}  // namespace floodgate::test_support
