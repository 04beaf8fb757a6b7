// System rules: whole-process adaptive protection of inbound traffic (Sentinel's
// SystemRuleManager).
#include "node/node_registry.hpp"
#include "system/system_slot.hpp"

#include <cmath>
#include <string>

namespace floodgate {

namespace {

constexpr double off = -1;

/// One merged threshold: the smallest value set by any rule, and which rule set it.
struct threshold {
  double value = off;
  std::int32_t rule_index = -1;

  bool on() const noexcept { return rule_index >= 0; }
  void merge(double v, std::int32_t index) noexcept {
    if (v >= 0 && (!on() || v < value)) {
      value = v;
      rule_index = index;
    }
  }
};

}  // namespace

struct system_guard::impl {
  threshold qps;
  threshold max_thread;
  threshold avg_rt;
  threshold load;
  threshold cpu;
  bool checking = false;
  std::shared_ptr<const system_status_source> status;
};

system_guard::system_guard(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
system_guard::~system_guard() = default;

std::unique_ptr<system_guard> system_guard::build(
    std::vector<indexed_rule<system_rule>> rules,
    std::shared_ptr<const system_status_source> status) {
  auto p = std::make_unique<impl>();
  // Every field merges with min() over all rules. Unlike Sentinel, whose last rule decides
  // whether checking is on at all, any rule with a threshold set turns checking on.
  for (const auto& [rule, index] : rules) {
    p->qps.merge(rule.qps, index);
    p->max_thread.merge(rule.max_thread, index);
    p->avg_rt.merge(rule.avg_rt, index);
    p->load.merge(rule.highest_system_load, index);
    p->cpu.merge(rule.highest_cpu_usage, index);
  }
  p->checking = p->qps.on() || p->max_thread.on() || p->avg_rt.on() || p->load.on() || p->cpu.on();
  p->status = std::move(status);
  return std::unique_ptr<system_guard>(new system_guard(std::move(p)));
}

system_rule system_guard::merged() const noexcept {
  system_rule r;
  r.qps = impl_->qps.value;
  r.max_thread = impl_->max_thread.value;
  r.avg_rt = impl_->avg_rt.value;
  r.highest_system_load = impl_->load.value;
  r.highest_cpu_usage = impl_->cpu.value;
  return r;
}

slot_verdict system_guard::check(const check_context& ctx) const noexcept {
  const impl& s = *impl_;
  if (!s.checking || ctx.type != entry_type::inbound) {
    return slot_verdict::pass();
  }
  const auto blocked = [](const threshold& t, system_limit limit) {
    block_info b;
    b.reason = block_reason::system;
    b.rule_index = t.rule_index;
    b.limit = limit;
    b.retry_after = std::chrono::seconds(1);
    return slot_verdict::blocked(b);
  };
  // Sentinel's order; the first limit exceeded wins. All read the global inbound node.
  const node::cluster_node& inbound = ctx.registry.inbound();
  const stat::window_reading window =
      s.qps.on() || s.avg_rt.on() ? inbound.read_window(ctx.now_ms) : stat::window_reading{};
  if (s.qps.on() && window.pass_qps + ctx.acquire > s.qps.value) {
    return blocked(s.qps, system_limit::qps);
  }
  const auto concurrency = static_cast<double>(inbound.concurrency());
  if (s.max_thread.on() && concurrency > s.max_thread.value) {
    return blocked(s.max_thread, system_limit::thread);
  }
  if (s.avg_rt.on() && window.avg_rt > s.avg_rt.value) {
    return blocked(s.avg_rt, system_limit::rt);
  }
  if (s.status == nullptr) {
    return slot_verdict::pass();
  }
  // High load alone never blocks: only when in-flight also exceeds the estimated capacity
  // maxSuccessQps × minRt (BBR).
  if (s.load.on() && s.status->load1() > s.load.value && concurrency > 1 &&
      concurrency > inbound.max_success_qps(ctx.now_ms) * inbound.min_rt(ctx.now_ms) / 1000) {
    return blocked(s.load, system_limit::load);
  }
  if (s.cpu.on() && s.status->cpu_usage() > s.cpu.value) {
    return blocked(s.cpu, system_limit::cpu);
  }
  return slot_verdict::pass();
}

}  // namespace floodgate
