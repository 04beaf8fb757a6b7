// ClusterNode: the statistics of one resource across all contexts, its origin nodes and the
// cumulative counters the metrics read.
#pragma once

#include <floodgate/chain/block.hpp>
#include "stat/shard_blocks.hpp"
#include "stat/statistic_node.hpp"
#include "stat/writer_shard.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace floodgate::node {

class default_node;
class node_registry;
class origin_node;

/// Upper bounds (seconds) of the request-duration histogram buckets; +Inf is implicit.
inline constexpr std::array<double, 11> duration_buckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                            0.5,   1.0,  2.5,   5.0,  10.0};

/// duration_buckets in nanoseconds (the histogram compares integers on the request path).
inline constexpr std::array<std::int64_t, duration_buckets.size()> duration_bucket_ns = [] {
  std::array<std::int64_t, duration_buckets.size()> ns{};
  for (std::size_t i = 0; i < ns.size(); ++i) {
    ns[i] = static_cast<std::int64_t>(duration_buckets[i] * 1e9 + 0.5);
  }
  return ns;
}();

/** Where resource_totals keeps each counter in a shard's block. What every passed entry writes
    comes first, so it shares one line: passed, duration_sum_ns, the origin cache, then
    duration[] (its first buckets hold most requests), errors, dry_run_blocks and blocked[]. */
struct totals_layout {
  static constexpr std::size_t histogram_size = duration_buckets.size() + 1;
  static constexpr std::size_t passed_index = 0;
  static constexpr std::size_t sum_index = 1;
  static constexpr std::size_t cache_index = 2;
  static constexpr std::size_t duration_index = 3;
  static constexpr std::size_t errors_index = duration_index + histogram_size;
  static constexpr std::size_t dry_run_index = errors_index + 1;
  static constexpr std::size_t blocked_index = dry_run_index + 1;
  /// Words per shard, rounded up to whole cache lines.
  static constexpr std::size_t words = (blocked_index + block_reason_count + 7) / 8 * 8;

  /// One writer shard's counters (created by its first write: stat/shard_blocks.hpp).
  struct alignas(64) block {
    std::atomic<std::uint64_t> w[words] = {};
  };
  using blocks = stat::shard_blocks<block>;

  /// Adds `n` to word `word` of the block of the writer (`shard`, `exclusive`): a store on the
  /// CPU (stat::add_on_cpu) into a CPU's shard, else an atomic add; into shard 0 if the writer
  /// has moved to another CPU or memory for its block ran out (dropped only if shard 0's could
  /// not be created either).
  [[gnu::always_inline]] static void add(blocks& b, std::uint32_t shard, bool exclusive,
                                         std::size_t word, std::uint64_t n) noexcept {
    block* own = b.get(shard);
    if (exclusive && own != nullptr && stat::add_on_cpu(own->w[word], n, shard)) [[likely]] {
      return;
    }
    add_slow(b, shard, exclusive, word, n);
  }
  /// add() for a shared shard or a block not created yet.
  static void add_slow(blocks& b, std::uint32_t shard, bool exclusive, std::size_t word,
                       std::uint64_t n) noexcept;
  /// Word `word` summed over the shards written so far.
  static std::uint64_t sum(const blocks& b, std::size_t word) noexcept {
    std::uint64_t total = 0;
    stat::for_each_used_shard([&](std::uint32_t i) {
      if (const block* own = b.get(i)) total += own->w[word].load(std::memory_order_relaxed);
    });
    return total;
  }
};

/** A monotonic counter kept once per writer shard (see stat/writer_shard.hpp): a thread adds
    to its CPU's shard with a store on the CPU (no lock prefix); load() sums the shards. A view into the per-shard
    blocks of @ref resource_totals, so one thread's counters share its own cache lines. */
class sharded_counter {
 public:
  sharded_counter(totals_layout::blocks* blocks, std::size_t word) noexcept
      : blocks_(blocks), word_(word) {}

  void fetch_add(std::uint64_t n, std::memory_order = std::memory_order_relaxed) noexcept {
    const stat::writer_shard shard = stat::this_thread_shard();
    totals_layout::add(*blocks_, shard.index, shard.exclusive, word_, n);
  }
  /// fetch_add into the shard of a write point already computed for this thread.
  void add(const stat::write_point& p, std::uint64_t n = 1) noexcept {
    totals_layout::add(*blocks_, p.shard, p.exclusive, word_, n);
  }
  std::uint64_t load(std::memory_order = std::memory_order_relaxed) const noexcept {
    return totals_layout::sum(*blocks_, word_);
  }

 private:
  totals_layout::blocks* blocks_;
  std::size_t word_;
};

/** `N` consecutive counters of @ref resource_totals (blocked[], duration[]): one view for the
    array, handing out a counter's view by index. */
template <std::size_t N>
class sharded_counters {
 public:
  sharded_counters(totals_layout::blocks* blocks, std::size_t first) noexcept
      : blocks_(blocks), first_(first) {}
  sharded_counter operator[](std::size_t i) const noexcept { return {blocks_, first_ + i}; }
  static constexpr std::size_t size() noexcept { return N; }

  /// Walks the counters in order (a range-for yields each counter's view by value).
  class iterator {
   public:
    iterator(const sharded_counters* owner, std::size_t i) noexcept : owner_(owner), i_(i) {}
    sharded_counter operator*() const noexcept { return (*owner_)[i_]; }
    iterator& operator++() noexcept {
      ++i_;
      return *this;
    }
    bool operator==(const iterator&) const noexcept = default;

   private:
    const sharded_counters* owner_;
    std::size_t i_;
  };
  iterator begin() const noexcept { return {this, 0}; }
  iterator end() const noexcept { return {this, N}; }

 private:
  totals_layout::blocks* blocks_;
  std::size_t first_;
};

/** Exact, monotonic counters since start, for Prometheus. Written on the request path into the
    writer's shard; read (summed) at scrape time. */
class resource_totals : totals_layout {
 public:
  resource_totals() = default;
  resource_totals(const resource_totals&) = delete;
  resource_totals& operator=(const resource_totals&) = delete;

 private:
  blocks blocks_;
  void bump(const stat::write_point& p, std::size_t word, std::uint64_t n) noexcept {
    add(blocks_, p.shard, p.exclusive, word, n);
  }

 public:
  sharded_counter passed{&blocks_, passed_index};
  sharded_counters<block_reason_count> blocked{&blocks_, blocked_index};
  sharded_counter errors{&blocks_, errors_index};           ///< completed with an error
  sharded_counter dry_run_blocks{&blocks_, dry_run_index};  ///< would-be flow blocks
  /// Completed requests per duration bucket (not cumulative; the last is +Inf).
  sharded_counters<histogram_size> duration{&blocks_, duration_index};
  sharded_counter duration_sum_ns{&blocks_, sum_index};

  /** A word of `shard`'s own block that the engine keeps the shard's last origin node in (a
      one-entry cache in front of the origin table; on the shard's own cache line). Null when
      that block is absent and memory for it ran out (no cache then). */
  std::atomic<std::uint64_t>* cache_word(std::uint32_t shard) noexcept {
    block* own = blocks_.create(shard, 1);
    return own != nullptr ? &own->w[cache_index] : nullptr;
  }
  /// One passed request, in `p`'s shard (passed.add(p) with the word addressed directly).
  void count_pass(const stat::write_point& p) noexcept { bump(p, passed_index, 1); }
  /// One completed request of `ns` nanoseconds into the histogram, in `p`'s shard.
  void observe_duration(std::int64_t ns, const stat::write_point& p) noexcept {
    std::size_t i = 0;
    while (i < duration_bucket_ns.size() && ns > duration_bucket_ns[i]) {
      ++i;
    }
    const auto sum = static_cast<std::uint64_t>(ns > 0 ? ns : 0);
    add(blocks_, p.shard, p.exclusive, duration_index + i, 1);
    add(blocks_, p.shard, p.exclusive, sum_index, sum);
  }
  std::uint64_t completed() const noexcept;
};

/** The origin name of a resource's overflow node: the origins that came after the cap of
    (resource, origin) pairs was reached share it (admin API `/floodgate/origins`). */
inline constexpr std::string_view overflow_origin_name = "<overflow>";
/// The context name of the default nodes (context, resource) pairs past the cap share.
inline constexpr std::string_view overflow_context_name = "<overflow>";

/** One resource's node: every context's traffic together (Sentinel's ClusterNode).

    @par Thread Safety
    Lock-free; created once, never destroyed before the engine.
*/
class cluster_node : public stat::statistic_node {
 public:
  cluster_node(std::string name, std::uint64_t hash, const stat::window_config& cfg)
      : statistic_node(cfg), name_(std::move(name)), hash_(hash) {}
  ~cluster_node();
  cluster_node(const cluster_node&) = delete;
  cluster_node& operator=(const cluster_node&) = delete;

  const std::string& name() const noexcept { return name_; }
  std::uint64_t hash() const noexcept { return hash_; }

  resource_totals& totals() noexcept { return totals_; }
  const resource_totals& totals() const noexcept { return totals_; }

  /// Origin nodes, newest first (a lock-free list that only grows).
  /// The engine's note of where this resource's rules are in the rule snapshot in force.
  std::uint64_t rules_hint() const noexcept { return rules_hint_.load(std::memory_order_relaxed); }
  void set_rules_hint(std::uint64_t hint) noexcept {
    rules_hint_.store(hint, std::memory_order_relaxed);
  }

  const origin_node* first_origin() const noexcept {
    return origins_.load(std::memory_order_acquire);
  }
  void push_origin(origin_node* n) noexcept;
  /** The node every origin past the registry's cap shares (its limits apply to them together);
      null until the first such origin. Also in the origin list. */
  origin_node* overflow_origin() const noexcept {
    return overflow_origin_.load(std::memory_order_acquire);
  }
  /** The default node every context shares for this resource once the registry's cap of
      (context, resource) pairs is reached (its rules still apply); null until then. */
  default_node* overflow_default() const noexcept {
    return overflow_default_.load(std::memory_order_acquire);
  }

 private:
  friend class node_registry;
  std::string name_;
  std::uint64_t hash_;
  /// The default node the registry found last for this resource: most resources are entered
  /// from one context, so this one-entry cache saves the (context, resource) table lookup.
  std::atomic<default_node*> last_default_{nullptr};
  std::atomic<std::uint64_t> rules_hint_{0};  // version 0 (the empty rule set): no rules
  std::atomic<origin_node*> origins_{nullptr};
  std::atomic<std::size_t> origin_count_{0};  // nodes of its own origins (registry_limits)
  std::atomic<origin_node*> overflow_origin_{nullptr};  // owned
  std::atomic<default_node*> overflow_default_{nullptr};  // owned
  resource_totals totals_;
};

/// The statistics of one (resource, origin) pair, or of every origin past the cap together.
class origin_node : public stat::statistic_node {
 public:
  enum class kind : std::uint8_t { one_origin, overflow };

  origin_node(cluster_node& owner, std::string origin, std::uint64_t hash,
              std::uint64_t origin_hash, const stat::window_config& cfg,
              kind k = kind::one_origin)
      : statistic_node(cfg),
        owner_(&owner),
        origin_(std::move(origin)),
        hash_(hash),
        origin_hash_(origin_hash),
        kind_(k) {}

  /// True for the resource's overflow node (many origins, named @ref overflow_origin_name).
  bool overflow() const noexcept { return kind_ == kind::overflow; }
  const cluster_node& owner() const noexcept { return *owner_; }
  const std::string& origin() const noexcept { return origin_; }
  std::uint64_t hash() const noexcept { return hash_; }
  /// hash_name(origin()).
  std::uint64_t origin_hash() const noexcept { return origin_hash_; }
  const origin_node* next() const noexcept { return next_; }

 private:
  friend class cluster_node;
  cluster_node* owner_;
  std::string origin_;
  std::uint64_t hash_;
  std::uint64_t origin_hash_;
  kind kind_;
  origin_node* next_ = nullptr;
};

}  // namespace floodgate::node
