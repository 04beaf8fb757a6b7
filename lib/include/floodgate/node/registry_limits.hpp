// Caps on the statistics tree (SPEC §2: 6000 resources, 2000 context names by default).
#pragma once

#include <cstddef>

namespace floodgate::node {

/** Caps on what the registry tracks. Past the resource or context cap an entry passes unchecked
    and is counted; past the pair caps it is counted on a node its resource keeps for all the
    pairs past the cap, and still checked. */
struct registry_limits {
  /** The largest value a cap may take: the registry's tables are made for their caps when the
      engine is (a pointer per slot, twice the cap rounded up to a power of two: 256 MiB at this
      cap). An engine given more throws std::invalid_argument. */
  static constexpr std::size_t max_cap = std::size_t{1} << 24;

  std::size_t max_resources = 6000;
  std::size_t max_contexts = 2000;
  std::size_t max_default_nodes = 12000;  ///< (context, resource) pairs
  std::size_t max_origin_nodes = 12000;   ///< (resource, origin) pairs, all resources together
  /** Origins one resource may have nodes for; 0 (the default) means a quarter of
      `max_origin_nodes` (3000), so invented origins sent to one resource (a scanner's 404s, all
      `<unmatched>`) cannot take every other resource's room for its callers. */
  std::size_t max_origins_per_resource = 0;
};

}  // namespace floodgate::node
