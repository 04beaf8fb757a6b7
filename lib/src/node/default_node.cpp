#include "node/default_node.hpp"

#include <algorithm>

namespace floodgate::node {

void child_list::push(default_node* child) noexcept {
  default_node* head = head_.load(std::memory_order_relaxed);
  do {
    child->next_sibling_ = head;
  } while (!head_.compare_exchange_weak(head, child, std::memory_order_release,
                                        std::memory_order_relaxed));
}

namespace {
template <class F>
void for_each_child(const child_list& list, F&& f) {
  for (const default_node* c = list.first(); c != nullptr; c = c->next_sibling()) {
    f(*c);
  }
}
}  // namespace

double entrance_node::pass_qps(std::int64_t now_ms) const noexcept {
  double sum = 0;
  for_each_child(children_, [&](const default_node& c) { sum += c.pass_qps(now_ms); });
  return sum;
}
double entrance_node::block_qps(std::int64_t now_ms) const noexcept {
  double sum = 0;
  for_each_child(children_, [&](const default_node& c) { sum += c.block_qps(now_ms); });
  return sum;
}
double entrance_node::success_qps(std::int64_t now_ms) const noexcept {
  double sum = 0;
  for_each_child(children_, [&](const default_node& c) { sum += c.success_qps(now_ms); });
  return sum;
}
double entrance_node::exception_qps(std::int64_t now_ms) const noexcept {
  double sum = 0;
  for_each_child(children_, [&](const default_node& c) { sum += c.exception_qps(now_ms); });
  return sum;
}
double entrance_node::min_rt(std::int64_t now_ms, double idle) const noexcept {
  double least = idle;
  for_each_child(children_,
                 [&](const default_node& c) { least = std::min(least, c.min_rt(now_ms)); });
  return least;
}
double entrance_node::total_qps(std::int64_t now_ms) const noexcept {
  return pass_qps(now_ms) + block_qps(now_ms);
}
double entrance_node::avg_rt(std::int64_t now_ms) const noexcept {
  double weighted = 0;
  double qps = 0;
  for_each_child(children_, [&](const default_node& c) {
    const double q = c.pass_qps(now_ms);
    weighted += c.avg_rt(now_ms) * q;
    qps += q;
  });
  return weighted / (qps == 0 ? 1 : qps);
}
std::uint64_t entrance_node::total_request(std::int64_t now_ms) const noexcept {
  std::uint64_t sum = 0;
  for_each_child(children_, [&](const default_node& c) { sum += c.total_request(now_ms); });
  return sum;
}
std::uint64_t entrance_node::total_pass(std::int64_t now_ms) const noexcept {
  std::uint64_t sum = 0;
  for_each_child(children_, [&](const default_node& c) { sum += c.total_pass(now_ms); });
  return sum;
}
std::uint64_t entrance_node::block_request(std::int64_t now_ms) const noexcept {
  std::uint64_t sum = 0;
  for_each_child(children_, [&](const default_node& c) { sum += c.block_request(now_ms); });
  return sum;
}
std::int64_t entrance_node::concurrency() const noexcept {
  std::int64_t sum = 0;
  for_each_child(children_, [&](const default_node& c) { sum += c.concurrency(); });
  return sum;
}

}  // namespace floodgate::node
