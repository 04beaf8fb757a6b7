// The engine's private state and its entry / exit paths.
#pragma once

#include "engine/rcu_cell.hpp"
#include "engine/rule_snapshot.hpp"
#include "node/node_registry.hpp"

#include <floodgate/engine/engine.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace floodgate::detail {

/** The word a steady_clock's now_ms() reads (its millisecond ticker, started by this call), or
    null for any other clock: the engine reads it directly instead of through the virtual call.
    The word is negative while the ticker idles (too few reads to keep it running); then read
    steady_ms_while_idle(), which also tells the ticker it is wanted. */
const std::atomic<std::int64_t>* steady_millisecond_word(const clock& c) noexcept;
std::int64_t steady_ms_while_idle() noexcept;
/// steady_clock::now_ns() without the virtual call.
std::int64_t steady_now_ns() noexcept;

/** An application's clock as the engine reads it: a reading below 0 is read as 0. The windows
    index their buckets by time since 0, so a negative time (a manual clock set before its
    origin) would address memory before them. */
class non_negative_clock final : public clock {
 public:
  explicit non_negative_clock(const clock* source) noexcept : source_(source) {}
  std::int64_t now_ns() const noexcept override {
    return std::max<std::int64_t>(source_->now_ns(), 0);
  }
  std::int64_t now_ms() const noexcept override {
    return std::max<std::int64_t>(source_->now_ms(), 0);
  }
  const clock* source() const noexcept { return source_; }

 private:
  const clock* source_;
};

class engine_impl {
 public:
  explicit engine_impl(engine_options options);

  entry enter(context& ctx, node::cluster_node* cluster, const entry_options& options) noexcept;
  void exit(entry& e) noexcept;
  /** Counts a waiting entry's pass and in-flight request, once (entry::proceed, or its exit),
      after the flow rules left for the end of its wait let it pass. False: one of them blocked
      it, and the entry is now a block (counted as one, holding nothing). */
  bool count_start(entry& e) noexcept;

  load_result load_rules(const rule_set& rules);
  void add_slot(std::shared_ptr<slot> s);
  void republish_locked(const rule_set& rules);

  const engine_options& options() const noexcept { return options_; }
  const clock& time() const noexcept { return *clock_; }
  node::node_registry& registry() noexcept { return registry_; }
  rcu_cell<rule_snapshot>& snapshot() noexcept { return snapshot_; }
  breaker_observers& observers() noexcept { return observers_; }
  std::shared_ptr<const system_status_source> system_status() const;
  std::uint64_t internal_errors() const noexcept {
    return internal_errors_.load(std::memory_order_relaxed);
  }
  rate_limit_header_style rate_limit_headers() const noexcept {
    return rate_limit_headers_.load(std::memory_order_relaxed);
  }
  ~engine_impl();

  void add_hot_key_observer(hot_key_observer observer);
  /// Refreshes every tracker and tells the observers; `f` then reads the trackers (same lock).
  void refresh_hot_keys(const std::function<void(const rule_snapshot&)>& f = {});

 private:
  /// The StatisticSlot's work for a pass: pass and in flight on every node, totals, reservations.
  void count_pass(node::cluster_node& cluster, node::default_node& node,
                  node::origin_node* origin, bool inbound, const resource_rules* rules,
                  const stat::write_point& at, std::uint32_t n, entry_tokens& tokens) noexcept;
  [[gnu::always_inline]] inline slot_verdict run_checks(const rule_snapshot& snap,
                                                        const resource_rules* rules,
                                                        const check_context& cc,
                                                        entry_tokens& tokens) noexcept;
  slot_verdict run_checks_with_user_slots(const rule_snapshot& snap, const resource_rules* rules,
                                          const check_context& cc, entry_tokens& tokens) noexcept;
  static void unwind(const rule_snapshot& snap, const resource_rules* rules, stage reached,
                     const check_context& cc, entry_tokens& tokens) noexcept;
  /// count_start()'s check of the rules left for the end of the wait; on a block, turns the
  /// entry into one. False when blocked.
  bool check_after_wait(entry& e, std::int64_t now_ms) noexcept;

  /** The write point of the calling thread at `now_ms` for every node of this engine, in the
      shard `ws`. The thread keeps the window arithmetic of the last one it computed (one per
      millisecond and engine at most); the shard is the caller's, read for this call. */
  stat::write_point point_at(const node::cluster_node& any, std::int64_t now_ms,
                             stat::writer_shard ws) const noexcept {
    struct memo {
      const engine_impl* owner = nullptr;
      stat::write_point point{};
    };
    static thread_local memo last;
    if (last.owner != this || last.point.ms != now_ms) [[unlikely]] {
      last.point = any.at(now_ms, ws);
      last.owner = this;
    }
    stat::write_point p = last.point;
    p.shard = ws.index;
    p.exclusive = ws.exclusive;
    return p;
  }

  /// clock_->now_ms(), one load for the production clock while its ticker runs.
  std::int64_t now_ms() const noexcept {
    if (ticker_ == nullptr) {
      return clock_->now_ms();
    }
    const std::int64_t ms = ticker_->load(std::memory_order_relaxed);
    return ms >= 0 ? ms : steady_ms_while_idle();
  }
  /// The time of an entry or exit in ms, and in ns for its duration: with a precise duration,
  /// one nanosecond read serves both (and leaves the ticker alone); otherwise the millisecond
  /// word, scaled. Checks always see the millisecond time.
  struct instant {
    std::int64_t ms;
    std::int64_t ns;
  };
  instant now(bool precise) const noexcept {
    if (precise) {
      const std::int64_t ns = ticker_ != nullptr ? steady_now_ns() : clock_->now_ns();
      return {ns / 1'000'000, ns};
    }
    const std::int64_t ms = now_ms();
    return {ms, ms * 1'000'000};
  }

  engine_options options_;
  non_negative_clock bounded_;  // the application's clock (or the steady one), read at >= 0
  const std::atomic<std::int64_t>* ticker_;
  const clock* clock_;  // the steady clock itself (never negative), else bounded_
  node::node_registry registry_;
  breaker_observers observers_;
  rcu_cell<rule_snapshot> snapshot_;
  mutable std::mutex control_;  // serialises loads and slot registration, never taken by requests
  std::vector<std::shared_ptr<slot>> user_slots_;
  std::shared_ptr<const system_status_source> system_status_;
  std::atomic<std::uint64_t> internal_errors_{0};
  std::atomic<rate_limit_header_style> rate_limit_headers_{rate_limit_header_style::off};

  // Hot keys (control plane only): refreshes and observer calls are serialized by hot_mutex_;
  // the ticker waits on hot_wake_ (never a request thread).
  std::mutex hot_mutex_;
  std::vector<hot_key_observer> hot_observers_;  // guarded by hot_mutex_
  std::mutex ticker_mutex_;
  std::condition_variable hot_wake_;
  bool ticker_stop_ = false;  // guarded by ticker_mutex_
  std::thread hot_ticker_;  // started by the first observer
};

/// The engine's private state, for floodgate's own tests and tools (not the public API).
struct engine_access {
  static engine_impl& impl(engine& e) noexcept { return *e.impl_; }
};

}  // namespace floodgate::detail
