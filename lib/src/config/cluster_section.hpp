// Reading the `cluster:` section and the cluster keys of flow rules (SPEC §3, §10).
#pragma once

#include "config/map_reader.hpp"

#include <floodgate/rules/rule_set.hpp>

namespace floodgate::config::detail {

/// Reads `cluster: {redis, namespace, timeoutMs}` from the document root into `out.cluster`.
void read_cluster_section(map_reader& top, rule_set& out);

/// Reads `clusterMode` and `clusterConfig: {thresholdType, fallbackToLocalWhenFail,
/// fallbackCount}` of one flow rule.
void read_flow_cluster(map_reader& m, flow_rule& r);

}  // namespace floodgate::config::detail
