// ClusterNode: the statistics of one resource across all contexts, its origin nodes and the
// cumulative counters the metrics read.
#pragma once

#include <floodgate/core/block.hpp>
#include <floodgate/stat/statistic_node.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace floodgate::node {

class origin_node;

/// Upper bounds (seconds) of the request-duration histogram buckets; +Inf is implicit.
inline constexpr std::array<double, 11> duration_buckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                            0.5,   1.0,  2.5,   5.0,  10.0};

/** Exact, monotonic counters since start, for Prometheus. Written on the request path with
    relaxed atomics; read at scrape time. */
struct resource_totals {
  std::atomic<std::uint64_t> passed{0};
  std::array<std::atomic<std::uint64_t>, block_reason_count> blocked{};
  std::atomic<std::uint64_t> errors{0};          ///< completed with an error
  std::atomic<std::uint64_t> dry_run_blocks{0};  ///< would-be flow blocks of dryRun rules
  /// Completed requests per duration bucket (not cumulative; the last is +Inf).
  std::array<std::atomic<std::uint64_t>, duration_buckets.size() + 1> duration{};
  std::atomic<std::uint64_t> duration_sum_ns{0};

  void observe_duration(std::int64_t ns) noexcept;
  std::uint64_t completed() const noexcept;
};

/** One resource's node: every context's traffic together (Sentinel's ClusterNode).

    @par Thread Safety
    Lock-free; created once, never destroyed before the engine.
*/
class cluster_node : public stat::statistic_node {
 public:
  cluster_node(std::string name, std::uint64_t hash, const stat::window_config& cfg)
      : statistic_node(cfg), name_(std::move(name)), hash_(hash) {}

  const std::string& name() const noexcept { return name_; }
  std::uint64_t hash() const noexcept { return hash_; }

  resource_totals& totals() noexcept { return totals_; }
  const resource_totals& totals() const noexcept { return totals_; }

  /// Origin nodes, newest first (a lock-free list that only grows).
  const origin_node* first_origin() const noexcept {
    return origins_.load(std::memory_order_acquire);
  }
  void push_origin(origin_node* n) noexcept;

 private:
  std::string name_;
  std::uint64_t hash_;
  std::atomic<origin_node*> origins_{nullptr};
  resource_totals totals_;
};

/// The statistics of one (resource, origin) pair.
class origin_node : public stat::statistic_node {
 public:
  origin_node(cluster_node& owner, std::string origin, std::uint64_t hash,
              const stat::window_config& cfg)
      : statistic_node(cfg), owner_(&owner), origin_(std::move(origin)), hash_(hash) {}

  const cluster_node& owner() const noexcept { return *owner_; }
  const std::string& origin() const noexcept { return origin_; }
  std::uint64_t hash() const noexcept { return hash_; }
  const origin_node* next() const noexcept { return next_; }

 private:
  friend class cluster_node;
  cluster_node* owner_;
  std::string origin_;
  std::uint64_t hash_;
  origin_node* next_ = nullptr;
};

}  // namespace floodgate::node
