// The registry of every node: resources, context entrances, per-context nodes and origins.
#pragma once

#include <floodgate/node/registry_limits.hpp>

#include "node/cluster_node.hpp"
#include "node/default_node.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

namespace floodgate::node {


/// Overflow counters: lookups refused because a cap was reached.
struct registry_overflow {
  std::atomic<std::uint64_t> resources{0};
  std::atomic<std::uint64_t> contexts{0};
  std::atomic<std::uint64_t> default_nodes{0};
  std::atomic<std::uint64_t> origins{0};
};

namespace detail {
inline std::uint64_t load_u64(const char* p) noexcept {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline std::uint64_t load_u32(const char* p) noexcept {
  std::uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
/// 64 x 64 -> 128-bit multiply, folded: the mixing step of the name hash.
inline std::uint64_t fold_multiply(std::uint64_t a, std::uint64_t b) noexcept {
  __extension__ using u128 = unsigned __int128;
  const u128 r = static_cast<u128>(a) * b;
  return static_cast<std::uint64_t>(r) ^ static_cast<std::uint64_t>(r >> 64);
}
}  // namespace detail

/// The per-process secret of @ref hash_name: three random words.
struct name_hash_key {
  std::uint64_t seed;
  std::uint64_t block;
  std::uint64_t last;
};
/// Draws a key from std::random_device (falling back to the clock and an address).
name_hash_key draw_name_hash_key() noexcept;

namespace detail {
/// The process's key, drawn on first use (so it is ready whatever static initialisation runs).
inline const name_hash_key& process_name_hash_key() noexcept {
  static const name_hash_key key = draw_name_hash_key();
  return key;
}
}  // namespace detail

/** The hash of a resource, context or origin name under `key`: reads the name 8 or 16 bytes at
    a time and mixes with folded 128-bit multiplies (a few instructions for the usual names of
    under 16 bytes). The key enters every multiply, so a caller who does not know it cannot
    choose names that collide (an unkeyed operand equal to the constant would zero the product
    and erase everything hashed before it). */
inline std::uint64_t hash_name(std::string_view s, const name_hash_key& key) noexcept {
  constexpr std::uint64_t k0 = 0xa0761d6478bd642fULL;
  constexpr std::uint64_t k1 = 0xe7037ed1a0b428dbULL;
  constexpr std::uint64_t k2 = 0x8ebc6af09c88c6e3ULL;
  const char* p = s.data();
  std::size_t n = s.size();
  std::uint64_t h = key.seed ^ k0 ^ (static_cast<std::uint64_t>(n) * k1);
  while (n > 16) {
    h = detail::fold_multiply(detail::load_u64(p) ^ key.block ^ k1, detail::load_u64(p + 8) ^ h);
    p += 16;
    n -= 16;
  }
  std::uint64_t a = 0;
  std::uint64_t b = 0;
  if (n >= 8) {
    a = detail::load_u64(p);
    b = detail::load_u64(p + n - 8);
  } else if (n >= 4) {
    a = detail::load_u32(p);
    b = detail::load_u32(p + n - 4);
  } else if (n > 0) {
    a = (std::uint64_t{static_cast<unsigned char>(p[0])} << 16) |
        (std::uint64_t{static_cast<unsigned char>(p[n / 2])} << 8) |
        static_cast<unsigned char>(p[n - 1]);
  }
  return detail::fold_multiply(a ^ key.last ^ k2, b ^ h) ^ n;
}

/** hash_name under the process's random key (SPEC §9: hashes of caller-chosen strings are
    seeded). Every table of names in the process uses this one. */
inline std::uint64_t hash_name(std::string_view s) noexcept {
  return hash_name(s, detail::process_name_hash_key());
}

/** Whether two names are equal: names of 4 to 16 bytes (most resource, context and origin
    names) are compared as two overlapping words, without a call to memcmp. */
inline bool same_name(std::string_view a, std::string_view b) noexcept {
  const std::size_t n = a.size();
  if (n != b.size()) {
    return false;
  }
  const char* p = a.data();
  const char* q = b.data();
  if (n >= 8 && n <= 16) {
    return ((detail::load_u64(p) ^ detail::load_u64(q)) |
            (detail::load_u64(p + n - 8) ^ detail::load_u64(q + n - 8))) == 0;
  }
  if (n >= 4 && n < 8) {
    return ((detail::load_u32(p) ^ detail::load_u32(q)) |
            (detail::load_u32(p + n - 4) ^ detail::load_u32(q + n - 4))) == 0;
  }
  return n == 0 || std::memcmp(p, q, n) == 0;
}

namespace detail {
/// A fixed-capacity, insert-only, lock-free hash table of node pointers.
template <class Node>
class node_table {
 public:
  explicit node_table(std::size_t cap);
  ~node_table();
  template <class Eq>
  Node* find(std::uint64_t hash, Eq&& eq) const noexcept;
  /// Inserts `fresh` unless an equal node exists; returns the node in the table, or null (and
  /// deletes `fresh`) when full.
  template <class Eq>
  Node* insert(std::uint64_t hash, Node* fresh, Eq&& eq) noexcept;
  std::size_t size() const noexcept { return size_.load(std::memory_order_relaxed); }
  std::size_t cap() const noexcept { return cap_; }
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i <= mask_; ++i) {
      if (const Node* n = slots_[i].load(std::memory_order_acquire)) {
        f(*n);
      }
    }
  }

 private:
  std::size_t cap_;
  std::size_t mask_;
  std::unique_ptr<std::atomic<Node*>[]> slots_;
  std::atomic<std::size_t> size_{0};
};
}  // namespace detail

/** Finds or creates nodes. Lookups of existing nodes are lock-free and never allocate; a node is
    created once, on first use, and lives as long as the registry. Memory is bounded by the caps.

    @par Thread Safety
    Any number of threads.
*/
class node_registry {
 public:
  node_registry(const registry_limits& limits, const stat::window_config& windows);
  ~node_registry();
  node_registry(const node_registry&) = delete;
  node_registry& operator=(const node_registry&) = delete;

  /// The shape of every node's windows.
  const stat::window_config& windows() const noexcept { return windows_; }

  /// The resource's cluster node, created on first use; null past the resource cap.
  cluster_node* resource(std::string_view name) noexcept;
  const cluster_node* find_resource(std::string_view name) const noexcept;

  /// The context's entrance node, created on first use; null past the context cap.
  entrance_node* entrance(std::string_view name) noexcept;
  const entrance_node* find_entrance(std::string_view name) const noexcept;

  /** The default node of `resource` in `entrance`'s context; created on first use as a child of
      `parent`. Past the cap of (context, resource) pairs, the resource's shared overflow node
      (@ref cluster_node::overflow_default, in no context's tree): the entry is still counted on
      the resource and checked against its rules (a chain rule that reads its context's node
      reads the shared one). Null only when even that node cannot be allocated. */
  default_node* default_node_for(entrance_node& entrance, cluster_node& resource,
                                 child_list& parent) noexcept {
    default_node* last = resource.last_default_.load(std::memory_order_acquire);
    if (last != nullptr && &last->entrance() == &entrance) [[likely]] {
      return last;
    }
    return find_default_node(entrance, resource, parent);
  }

  /** The (resource, origin) node; null for an empty origin. Past the cap of (resource, origin)
      pairs, the resource's shared overflow node (@ref cluster_node::overflow_origin): origins
      beyond the cap still count, and rules on origins still limit them, together. */
  origin_node* origin(cluster_node& resource, std::string_view origin) noexcept {
    return this->origin(resource, origin, hash_name(origin));
  }
  /// As above with `hash_name(origin)` already computed (contexts compute it once).
  origin_node* origin(cluster_node& resource, std::string_view origin,
                      std::uint64_t origin_hash) noexcept;
  /** As above, through the one-entry cache `resource` keeps per writer shard: a caller that
      sees the same origin again (most do) skips hashing into the origin table. */
  origin_node* origin(cluster_node& resource, std::string_view origin, std::uint64_t origin_hash,
                      std::uint32_t shard) noexcept {
    if (origin.empty()) {
      return nullptr;
    }
    std::atomic<std::uint64_t>* slot = resource.totals().cache_word(shard);
    if (slot == nullptr) [[unlikely]] {
      return this->origin(resource, origin, origin_hash);
    }
    auto* last = reinterpret_cast<origin_node*>(slot->load(std::memory_order_acquire));
    if (last != nullptr && last->origin_hash() == origin_hash &&
        same_name(last->origin(), origin)) {
      return last;
    }
    origin_node* n = this->origin(resource, origin, origin_hash);
    if (n != nullptr && !n->overflow()) {  // the overflow node stands for many names
      slot->store(reinterpret_cast<std::uint64_t>(n), std::memory_order_release);
    }
    return n;
  }

  /// The (resource, origin) node if one exists; never creates one (control plane).
  const origin_node* find_origin(const cluster_node& resource,
                                 std::string_view origin) const noexcept;
  /// The default node of `resource` in `entrance`'s context if one exists; never creates one.
  const default_node* find_default(const entrance_node& entrance,
                                   const cluster_node& resource) const noexcept;

  /// The global inbound node (Sentinel's `__total_inbound_traffic__`).
  cluster_node& inbound() noexcept { return *inbound_; }
  const cluster_node& inbound() const noexcept { return *inbound_; }

  /// Entrance nodes, newest first.
  const entrance_node* first_entrance() const noexcept {
    return entrances_head_.load(std::memory_order_acquire);
  }

  /// Calls `f(const cluster_node&)` for every resource (unordered).
  template <class F>
  void for_each_resource(F&& f) const {
    resources_.for_each(f);
  }

  std::size_t resource_count() const noexcept { return resources_.size(); }
  const registry_overflow& overflow() const noexcept { return overflow_; }
  const registry_limits& limits() const noexcept { return limits_; }

 private:
  default_node* find_default_node(entrance_node& entrance, cluster_node& resource,
                                  child_list& parent) noexcept;
  /// Counts an origin past the cap and returns `resource`'s overflow node, created on first use.
  origin_node* overflow_origin(cluster_node& resource) noexcept;
  /// Counts a (context, resource) pair past the cap and returns `resource`'s overflow default
  /// node, created on first use.
  default_node* overflow_default(cluster_node& resource) noexcept;

  registry_limits limits_;
  stat::window_config windows_;
  std::unique_ptr<cluster_node> inbound_;
  /// The context the overflow default nodes belong to (listed nowhere).
  std::unique_ptr<entrance_node> overflow_entrance_;
  detail::node_table<cluster_node> resources_;
  detail::node_table<entrance_node> entrances_;
  detail::node_table<default_node> defaults_;
  detail::node_table<origin_node> origins_;
  std::size_t origins_per_resource_;  // limits_.max_origins_per_resource, 0 resolved
  std::atomic<entrance_node*> entrances_head_{nullptr};
  registry_overflow overflow_;
};

}  // namespace floodgate::node
