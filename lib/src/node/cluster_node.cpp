#include "node/cluster_node.hpp"

#include "node/default_node.hpp"

namespace floodgate::node {

void totals_layout::add_slow(blocks& b, std::uint32_t shard, bool exclusive, std::size_t word,
                             std::uint64_t n) noexcept {
  block* own = b.fallback(shard, exclusive, 1);
  if (own == nullptr) {
    return;  // no memory for even the shared shard's block: not counted
  }
  if (exclusive) {
    if (stat::add_on_cpu(own->w[word], n, shard)) {
      return;
    }
    own = b.create(0, 1);  // the thread runs on another CPU now: the shared shard
    if (own == nullptr) return;
  }
  own->w[word].fetch_add(n, std::memory_order_relaxed);
}

std::uint64_t resource_totals::completed() const noexcept {
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < duration.size(); ++i) {
    n += duration[i].load();
  }
  return n;
}

cluster_node::~cluster_node() {
  delete overflow_origin_.load(std::memory_order_relaxed);
  delete overflow_default_.load(std::memory_order_relaxed);
}

void cluster_node::push_origin(origin_node* n) noexcept {
  origin_node* head = origins_.load(std::memory_order_relaxed);
  do {
    n->next_ = head;
  } while (!origins_.compare_exchange_weak(head, n, std::memory_order_release,
                                           std::memory_order_relaxed));
}

}  // namespace floodgate::node
