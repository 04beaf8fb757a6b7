// A resource's nodes and a manual clock, for unit tests of the flow controllers and node selection.
#pragma once

#include <floodgate/chain/clock.hpp>
#include <floodgate/chain/slot.hpp>
#include "flow/flow_request.hpp"
#include "node/node_registry.hpp"

#include <cstdint>
#include <string_view>

namespace floodgate::test_support {

/// Resource `res` entered in context `ctx`: its cluster, default and (optional) origin nodes.
struct flow_harness {
  manual_clock time{1'000'000};
  node::node_registry registry{node::registry_limits{}, stat::window_config{}};
  node::cluster_node& cluster = *registry.resource("res");
  node::entrance_node& entrance = *registry.entrance("ctx");
  node::default_node& node = *registry.default_node_for(entrance, cluster, entrance.children());

  flow::flow_request request(std::uint32_t acquire = 1, bool prioritized = false) const {
    return {time.now_ms(), time.now_ns(), acquire, prioritized, 500};
  }

  /// The cluster node as a `default` direct rule sees it: exclusive to the rule.
  flow::selected_node cluster_exclusive() { return {&cluster, &cluster, nullptr, true}; }
  /// A node read the Sentinel way (check-then-act), e.g. an `other` rule's origin node.
  flow::selected_node shared(stat::statistic_node& n) { return {&n, &n, nullptr, false}; }

  check_context check(std::string_view origin = {}, std::string_view context_name = "ctx",
                      node::origin_node* origin_node = nullptr) {
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

  /// Records `n` passes now on the cluster node (as the statistic slot would).
  void pass(std::uint32_t n = 1) { cluster.add_pass(time.now_ms(), n); }
};

}  // namespace floodgate::test_support
