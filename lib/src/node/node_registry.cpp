#include "node/node_registry.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <functional>
#include <new>
#include <random>

namespace floodgate::node {

namespace {

std::uint64_t mix(std::uint64_t x) noexcept {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

std::uint64_t pair_hash(const void* a, const void* b) noexcept {
  return mix(reinterpret_cast<std::uintptr_t>(a) * 31 + reinterpret_cast<std::uintptr_t>(b));
}

}  // namespace

name_hash_key draw_name_hash_key() noexcept {
  try {
    std::random_device device;
    const auto word = [&] { return (std::uint64_t{device()} << 32) ^ device(); };
    return {word(), word(), word()};
  } catch (...) {
    // No entropy device: the clock and where the stack is are still unknown to a remote caller.
    int local = 0;
    const auto t = static_cast<std::uint64_t>(
        std::chrono::steady_clock::now().time_since_epoch().count());
    const auto a = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&local));
    return {mix(t), mix(t ^ a), mix(a + 0x9e3779b97f4a7c15ULL)};
  }
}

namespace detail {

template <class Node>
node_table<Node>::node_table(std::size_t cap)
    : cap_(cap),
      mask_(std::bit_ceil(std::max<std::size_t>(cap * 2, 16)) - 1),
      slots_(new std::atomic<Node*>[mask_ + 1]) {
  for (std::size_t i = 0; i <= mask_; ++i) {
    slots_[i].store(nullptr, std::memory_order_relaxed);
  }
}

template <class Node>
node_table<Node>::~node_table() {
  for (std::size_t i = 0; i <= mask_; ++i) {
    delete slots_[i].load(std::memory_order_relaxed);
  }
}

template <class Node>
template <class Eq>
Node* node_table<Node>::find(std::uint64_t hash, Eq&& eq) const noexcept {
  for (std::size_t i = hash & mask_;; i = (i + 1) & mask_) {
    Node* n = slots_[i].load(std::memory_order_acquire);
    if (n == nullptr) {
      return nullptr;
    }
    if (n->hash() == hash && eq(*n)) {
      return n;
    }
  }
}

template <class Node>
template <class Eq>
Node* node_table<Node>::insert(std::uint64_t hash, Node* fresh, Eq&& eq) noexcept {
  if (size_.fetch_add(1, std::memory_order_relaxed) >= cap_) {
    size_.fetch_sub(1, std::memory_order_relaxed);
    delete fresh;
    return nullptr;
  }
  for (std::size_t i = hash & mask_;; i = (i + 1) & mask_) {
    Node* n = slots_[i].load(std::memory_order_acquire);
    if (n == nullptr) {
      if (slots_[i].compare_exchange_strong(n, fresh, std::memory_order_acq_rel,
                                            std::memory_order_acquire)) {
        return fresh;
      }
    }
    if (n != nullptr && n->hash() == hash && eq(*n)) {
      size_.fetch_sub(1, std::memory_order_relaxed);
      delete fresh;
      return n;
    }
  }
}

}  // namespace detail

node_registry::node_registry(const registry_limits& limits, const stat::window_config& windows)
    : limits_(limits),
      windows_(windows),
      inbound_(std::make_unique<cluster_node>("__total_inbound_traffic__", 0, windows)),
      overflow_entrance_(std::make_unique<entrance_node>(std::string(overflow_context_name), 0)),
      resources_(limits.max_resources),
      entrances_(limits.max_contexts),
      defaults_(limits.max_default_nodes),
      origins_(limits.max_origin_nodes),
      origins_per_resource_(limits.max_origins_per_resource != 0
                                ? limits.max_origins_per_resource
                                : std::max<std::size_t>(limits.max_origin_nodes / 4, 1)) {}

node_registry::~node_registry() = default;

cluster_node* node_registry::resource(std::string_view name) noexcept {
  const auto h = hash_name(name);
  auto eq = [name](const cluster_node& n) { return same_name(n.name(), name); };
  if (cluster_node* n = resources_.find(h, eq)) {
    return n;
  }
  cluster_node* fresh = nullptr;
  try {
    fresh = new cluster_node(std::string(name), h, windows_);
  } catch (...) {
    overflow_.resources.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  cluster_node* n = resources_.insert(h, fresh, eq);
  if (n == nullptr) {
    overflow_.resources.fetch_add(1, std::memory_order_relaxed);
  }
  return n;
}

const cluster_node* node_registry::find_resource(std::string_view name) const noexcept {
  return resources_.find(hash_name(name),
                         [name](const cluster_node& n) { return n.name() == name; });
}

entrance_node* node_registry::entrance(std::string_view name) noexcept {
  const auto h = hash_name(name);
  auto eq = [name](const entrance_node& n) { return n.name() == name; };
  if (entrance_node* n = entrances_.find(h, eq)) {
    return n;
  }
  entrance_node* fresh = nullptr;
  try {
    fresh = new entrance_node(std::string(name), h);
  } catch (...) {
    overflow_.contexts.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  entrance_node* n = entrances_.insert(h, fresh, eq);
  if (n == nullptr) {
    overflow_.contexts.fetch_add(1, std::memory_order_relaxed);
  } else if (n == fresh) {
    entrance_node* head = entrances_head_.load(std::memory_order_relaxed);
    do {
      fresh->next_ = head;
    } while (!entrances_head_.compare_exchange_weak(head, fresh, std::memory_order_release,
                                                    std::memory_order_relaxed));
  }
  return n;
}

const entrance_node* node_registry::find_entrance(std::string_view name) const noexcept {
  return entrances_.find(hash_name(name),
                         [name](const entrance_node& n) { return n.name() == name; });
}

namespace {
/// Where a (resource, origin) node lives in the origin table.
std::uint64_t origin_slot_hash(const cluster_node& resource, std::uint64_t origin_hash) noexcept {
  return mix(resource.hash() ^ (origin_hash * 0x9e3779b97f4a7c15ULL));
}
/// Whether `n` is the default node of `resource` in `entrance`'s context.
bool is_default_of(const default_node& n, const entrance_node& entrance,
                   const cluster_node& resource) noexcept {
  return &n.entrance() == &entrance && &n.cluster() == &resource;
}
}  // namespace

const default_node* node_registry::find_default(const entrance_node& entrance,
                                                const cluster_node& resource) const noexcept {
  return defaults_.find(pair_hash(&entrance, &resource), [&](const default_node& n) {
    return is_default_of(n, entrance, resource);
  });
}

const origin_node* node_registry::find_origin(const cluster_node& resource,
                                              std::string_view origin) const noexcept {
  if (origin.empty()) {
    return nullptr;
  }
  return origins_.find(origin_slot_hash(resource, hash_name(origin)), [&](const origin_node& n) {
    return &n.owner() == &resource && n.origin() == origin;
  });
}

default_node* node_registry::find_default_node(entrance_node& entrance, cluster_node& resource,
                                               child_list& parent) noexcept {
  const auto h = pair_hash(&entrance, &resource);
  auto eq = [&](const default_node& n) { return is_default_of(n, entrance, resource); };
  if (default_node* n = defaults_.find(h, eq)) {
    resource.last_default_.store(n, std::memory_order_release);
    return n;
  }
  if (defaults_.size() >= defaults_.cap()) {
    return overflow_default(resource);  // full: do not allocate a node only to drop it
  }
  default_node* fresh = nullptr;
  try {
    fresh = new default_node(resource, entrance, windows_);
  } catch (...) {
    return overflow_default(resource);
  }
  fresh->hash_ = h;
  default_node* n = defaults_.insert(h, fresh, eq);
  if (n == nullptr) {
    return overflow_default(resource);
  }
  if (n == fresh) {
    parent.push(fresh);
  }
  resource.last_default_.store(n, std::memory_order_release);
  return n;
}

namespace {

/** The node `slot` holds, made with `make` (which may throw) and published on first use; null
    when it cannot be made. `on_published` runs once, for the node that won the slot. */
template <class Node, class Make, class Published>
Node* publish_once(std::atomic<Node*>& slot, Make&& make, Published&& on_published) noexcept {
  if (Node* n = slot.load(std::memory_order_acquire)) {
    return n;
  }
  Node* fresh = nullptr;
  try {
    fresh = make();
  } catch (...) {
    return nullptr;
  }
  Node* expected = nullptr;
  if (!slot.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel,
                                    std::memory_order_acquire)) {
    delete fresh;
    return expected;
  }
  on_published(fresh);
  return fresh;
}

}  // namespace

default_node* node_registry::overflow_default(cluster_node& resource) noexcept {
  overflow_.default_nodes.fetch_add(1, std::memory_order_relaxed);
  // Null when out of memory: the entry passes unchecked.
  return publish_once(
      resource.overflow_default_,
      [&] { return new default_node(resource, *overflow_entrance_, windows_); },
      [](default_node*) {});
}

origin_node* node_registry::origin(cluster_node& resource, std::string_view origin,
                                   std::uint64_t origin_hash) noexcept {
  if (origin.empty()) {
    return nullptr;
  }
  const auto h = origin_slot_hash(resource, origin_hash);
  auto eq = [&](const origin_node& n) { return &n.owner() == &resource && n.origin() == origin; };
  if (origin_node* n = origins_.find(h, eq)) {
    return n;
  }
  if (origins_.size() >= origins_.cap()) {
    return overflow_origin(resource);  // full: do not allocate a node only to drop it
  }
  // A place among the resource's own origins, reserved first so racing threads cannot pass
  // the per-resource cap together; given back unless a node of this origin is made here.
  if (resource.origin_count_.fetch_add(1, std::memory_order_relaxed) >= origins_per_resource_) {
    resource.origin_count_.fetch_sub(1, std::memory_order_relaxed);
    return overflow_origin(resource);
  }
  const auto give_back = [&] { resource.origin_count_.fetch_sub(1, std::memory_order_relaxed); };
  origin_node* fresh = nullptr;
  try {
    fresh = new origin_node(resource, std::string(origin), h, origin_hash, windows_);
  } catch (...) {
    give_back();
    return overflow_origin(resource);
  }
  origin_node* n = origins_.insert(h, fresh, eq);
  if (n == nullptr) {
    give_back();
    return overflow_origin(resource);
  }
  if (n == fresh) {
    resource.push_origin(fresh);
  } else {
    give_back();  // another thread made this origin's node first
  }
  return n;
}

origin_node* node_registry::overflow_origin(cluster_node& resource) noexcept {
  overflow_.origins.fetch_add(1, std::memory_order_relaxed);
  // Null when out of memory: the entry is counted on the resource only.
  return publish_once(
      resource.overflow_origin_,
      [&] {
        return new origin_node(resource, std::string(overflow_origin_name), 0, 0, windows_,
                               origin_node::kind::overflow);
      },
      [&](origin_node* n) { resource.push_origin(n); });
}

template class detail::node_table<cluster_node>;
template class detail::node_table<entrance_node>;
template class detail::node_table<default_node>;
template class detail::node_table<origin_node>;

}  // namespace floodgate::node
