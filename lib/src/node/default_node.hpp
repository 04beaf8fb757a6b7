// DefaultNode and EntranceNode: the per-context statistics tree.
#pragma once

#include "node/cluster_node.hpp"

#include <atomic>
#include <cstdint>
#include <string>

namespace floodgate::node {

class default_node;
class entrance_node;

/// A lock-free list of child default nodes that only grows.
class child_list {
 public:
  const default_node* first() const noexcept { return head_.load(std::memory_order_acquire); }
  void push(default_node* child) noexcept;

 private:
  std::atomic<default_node*> head_{nullptr};
};

/** The statistics of one resource within one context (Sentinel's DefaultNode). Every write also
    goes to the resource's cluster node. Children are the resources entered while this one was
    the innermost entry, when the child node was first created. */
class default_node : public stat::statistic_node {
 public:
  default_node(cluster_node& cluster, const entrance_node& entrance, const stat::window_config& cfg)
      : statistic_node(cfg), cluster_(&cluster), entrance_(&entrance) {}

  cluster_node& cluster() const noexcept { return *cluster_; }
  const entrance_node& entrance() const noexcept { return *entrance_; }
  const child_list& children() const noexcept { return children_; }
  child_list& children() noexcept { return children_; }
  const default_node* next_sibling() const noexcept { return next_sibling_; }
  std::uint64_t hash() const noexcept { return hash_; }

  // Write-through to the cluster node.
  void record_pass(const stat::write_point& p, std::uint32_t n) noexcept {
    statistic_node::record_pass(p, n);
    cluster_->record_pass(p, n);
  }
  void record_completion(const stat::write_point& p, std::int64_t rt_ms, std::uint32_t n,
                         bool error) noexcept {
    statistic_node::record_completion(p, rt_ms, n, error);
    cluster_->record_completion(p, rt_ms, n, error);
  }
  void increase_concurrency(const stat::write_point& p) noexcept {
    statistic_node::increase_concurrency(p);
    cluster_->increase_concurrency(p);
  }
  void add_pass(const stat::write_point& p, std::uint32_t n) noexcept {
    statistic_node::add_pass(p, n);
    cluster_->add_pass(p, n);
  }
  void add_block(const stat::write_point& p, std::uint32_t n) noexcept {
    statistic_node::add_block(p, n);
    cluster_->add_block(p, n);
  }
  void add_exception(const stat::write_point& p, std::uint32_t n) noexcept {
    statistic_node::add_exception(p, n);
    cluster_->add_exception(p, n);
  }
  void add_rt_and_success(const stat::write_point& p, std::int64_t rt_ms,
                          std::uint32_t n) noexcept {
    statistic_node::add_rt_and_success(p, rt_ms, n);
    cluster_->add_rt_and_success(p, rt_ms, n);
  }
  void add_pass(std::int64_t now_ms, std::uint32_t n) noexcept {
    statistic_node::add_pass(now_ms, n);
    cluster_->add_pass(now_ms, n);
  }
  void add_block(std::int64_t now_ms, std::uint32_t n) noexcept {
    statistic_node::add_block(now_ms, n);
    cluster_->add_block(now_ms, n);
  }
  void add_exception(std::int64_t now_ms, std::uint32_t n) noexcept {
    statistic_node::add_exception(now_ms, n);
    cluster_->add_exception(now_ms, n);
  }
  void add_rt_and_success(std::int64_t now_ms, std::int64_t rt_ms, std::uint32_t n) noexcept {
    statistic_node::add_rt_and_success(now_ms, rt_ms, n);
    cluster_->add_rt_and_success(now_ms, rt_ms, n);
  }
  void increase_concurrency() noexcept {
    statistic_node::increase_concurrency();
    cluster_->increase_concurrency();
  }
  void decrease_concurrency() noexcept {
    statistic_node::decrease_concurrency();
    cluster_->decrease_concurrency();
  }
  void add_occupied_pass(std::int64_t now_ms, std::uint32_t n) noexcept {
    statistic_node::add_occupied_pass(now_ms, n);
    cluster_->add_occupied_pass(now_ms, n);
  }
  void add_waiting(std::int64_t future_ms, std::uint32_t n) noexcept {
    statistic_node::add_waiting(future_ms, n);
    cluster_->add_waiting(future_ms, n);
  }

 private:
  friend class child_list;
  friend class node_registry;
  cluster_node* cluster_;
  const entrance_node* entrance_;
  child_list children_;
  default_node* next_sibling_ = nullptr;
  std::uint64_t hash_ = 0;
};

/** The root of one context name's tree (Sentinel's EntranceNode). It keeps no counters: its
    reads are sums over its children. */
class entrance_node {
 public:
  entrance_node(std::string name, std::uint64_t hash) : name_(std::move(name)), hash_(hash) {}

  const std::string& name() const noexcept { return name_; }
  std::uint64_t hash() const noexcept { return hash_; }
  const child_list& children() const noexcept { return children_; }
  child_list& children() noexcept { return children_; }
  const entrance_node* next() const noexcept { return next_; }

  double pass_qps(std::int64_t now_ms) const noexcept;
  double block_qps(std::int64_t now_ms) const noexcept;
  double success_qps(std::int64_t now_ms) const noexcept;
  double exception_qps(std::int64_t now_ms) const noexcept;
  double total_qps(std::int64_t now_ms) const noexcept;
  /// The least of its children's minRt; `idle` (the window's statisticMaxRt) without children.
  double min_rt(std::int64_t now_ms, double idle) const noexcept;
  /// Σ(child avgRt × child passQps) / Σ child passQps (divisor 1 when 0), as Sentinel.
  double avg_rt(std::int64_t now_ms) const noexcept;
  std::uint64_t total_request(std::int64_t now_ms) const noexcept;
  std::uint64_t total_pass(std::int64_t now_ms) const noexcept;
  std::uint64_t block_request(std::int64_t now_ms) const noexcept;
  std::int64_t concurrency() const noexcept;

 private:
  friend class node_registry;
  std::string name_;
  std::uint64_t hash_;
  child_list children_;
  entrance_node* next_ = nullptr;
};

}  // namespace floodgate::node
