// The circuit breaker the degrade slot drives: Sentinel 1.8's state machine over a tumbling window.
#pragma once

#include <floodgate/degrade/circuit_breaker.hpp>
#include <floodgate/rules/degrade_rule.hpp>

#include "degrade/breaker_window.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>

namespace floodgate::detail {

/** One circuit breaker: Sentinel's ResponseTimeCircuitBreaker (grade slow_request_ratio) and
    ExceptionCircuitBreaker (error_ratio, error_count) in one class, as they differ only in what
    makes a request bad (rt > count ms, or a traced error) and in the value compared.

    State and next-probe time live in one atomic word, so every transition is a single CAS and no
    request can see OPEN with a stale probe time:
    - CLOSED: every request passes; a completing request that makes the value exceed the threshold
      (with at least minRequestAmount requests in the window) opens the breaker.
    - OPEN: requests are blocked until `next_retry_ms`; then the one request that wins the
      OPEN → HALF_OPEN CAS passes as the probe.
    - HALF_OPEN: every request is blocked; the next request to complete decides: bad → OPEN for
      another timeWindow, good → CLOSED with an empty window. A probe blocked by a later check
      reverts to OPEN without moving `next_retry_ms`, so the next request probes again.

    @par Thread Safety
    All members may be called from any number of threads. Observers run on the thread that made
    the transition, after it is visible.
*/
class alignas(64) circuit_breaker_impl final : public circuit_breaker {
 public:
  /// What try_pass() decided.
  struct admission {
    enum class kind : std::uint8_t { pass, probe, block };
    kind outcome = kind::pass;
    std::int64_t retry_after_ms = 0;  ///< for `block`: time until the next probe may pass, >= 1
  };

  /// While a probe runs, blocked requests are told to retry after this long: the probe usually
  /// settles within it, and if it fails the next reply carries the full recovery time.
  static constexpr std::int64_t half_open_retry_after_ms = 1000;

  /// `rule` must be valid (see validate()); `observers` must outlive the breaker.
  circuit_breaker_impl(degrade_rule rule, const breaker_observers& observers);

  const degrade_rule& rule() const noexcept override { return rule_; }
  breaker_state state() const noexcept override {
    return state_of(word_.load(std::memory_order_acquire));
  }
  std::int64_t next_retry_ms() const noexcept override {
    return retry_of(word_.load(std::memory_order_acquire));
  }
  std::uint64_t transitions(breaker_state from, breaker_state to) const noexcept override {
    if (index(from) >= transitions_.size() || index(to) >= transitions_.size()) {
      return 0;  // `adaptive` is never a binary breaker's state
    }
    return transitions_[index(from)][index(to)].load(std::memory_order_relaxed);
  }

  std::uint64_t carried_transitions(breaker_state from, breaker_state to) const noexcept override {
    if (index(from) >= carried_.size() || index(to) >= carried_.size()) return 0;
    return carried_[index(from)][index(to)];
  }

  /** Adds `earlier`'s transition counts to this breaker's: a changed rule's new breaker goes on
      counting where the breaker it replaces under the same label stopped. Called before the
      breaker is published (carried_ is read-only afterwards). */
  void carry_transitions(const circuit_breaker_impl& earlier) noexcept {
    for (std::size_t from = 0; from < transitions_.size(); ++from) {
      for (std::size_t to = 0; to < transitions_[from].size(); ++to) {
        const std::uint64_t n = earlier.transitions_[from][to].load(std::memory_order_relaxed);
        carried_[from][to] += n;
        transitions_[from][to].fetch_add(n, std::memory_order_relaxed);
      }
    }
  }

  /// Sentinel's tryPass at `now_ms`: `probe` when this call won OPEN → HALF_OPEN.
  /// True while CLOSED: try_pass() would let anything through without a transition.
  bool closed() const noexcept {
    return state_of(word_.load(std::memory_order_acquire)) == breaker_state::closed;
  }

  admission try_pass(std::int64_t now_ms) noexcept {
    std::int64_t w = word_.load(std::memory_order_acquire);
    for (;;) {
      switch (state_of(w)) {
        case breaker_state::closed:
        case breaker_state::adaptive:  // never a binary breaker's state
          return {};
        case breaker_state::half_open:
          return {admission::kind::block, half_open_retry_after_ms};
        case breaker_state::open:
          if (now_ms < retry_of(w)) {
            return {admission::kind::block, retry_of(w) - now_ms};
          }
          if (transition(w, breaker_state::half_open, retry_of(w), std::nullopt)) {
            return {admission::kind::probe, 0};
          }
          break;  // `w` now holds the word that beat us; decide again on it
      }
    }
  }

  /// The probe this breaker admitted was blocked by a later check: HALF_OPEN → OPEN, keeping the
  /// probe time (Sentinel's whenTerminate fallback).
  void revert_probe() noexcept;

  /// Sentinel's onRequestComplete for a request that passed: records it and moves the state.
  void on_request_complete(std::int64_t now_ms, std::int64_t rt_ms, bool error) noexcept {
    const bool bad = slow_grade_ ? rt_ms > max_rt_ms_ : error;
    const breaker_window::counts c = window_.record(now_ms, bad, min_request_amount_);
    std::int64_t w = word_.load(std::memory_order_acquire);
    switch (state_of(w)) {
      case breaker_state::open:
        return;
      case breaker_state::half_open:
        settle_half_open(w, now_ms, bad);
        return;
      case breaker_state::closed:
      case breaker_state::adaptive:  // never a binary breaker's state
        break;
    }
    if (c.total < min_request_amount_) {
      return;
    }
    const double value = grade_ == degrade_grade::error_count
                             ? static_cast<double>(c.bad)
                             : static_cast<double>(c.bad) / static_cast<double>(c.total);
    // Strictly greater; "all slow" at a threshold of 1.0 also trips (Sentinel's special case).
    if (value > threshold_ || (slow_grade_ && value == threshold_ && threshold_ == 1.0)) {
      open_from_closed(w, now_ms, value);
    }
  }

 private:
  static constexpr unsigned state_bits = 2;

  static breaker_state state_of(std::int64_t w) noexcept {
    return static_cast<breaker_state>(w & ((1 << state_bits) - 1));
  }
  static std::int64_t retry_of(std::int64_t w) noexcept { return w >> state_bits; }
  static std::int64_t pack(breaker_state s, std::int64_t retry_ms) noexcept {
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(retry_ms) << state_bits) |
           static_cast<std::int64_t>(s);
  }
  static std::size_t index(breaker_state s) noexcept { return static_cast<std::size_t>(s); }

  /// CAS from `expected` to (`to`, `retry_ms`); on success counts and notifies. On failure
  /// `expected` holds the current word.
  bool transition(std::int64_t& expected, breaker_state to, std::int64_t retry_ms,
                  std::optional<double> value) noexcept;
  void settle_half_open(std::int64_t w, std::int64_t now_ms, bool bad) noexcept;
  void open_from_closed(std::int64_t w, std::int64_t now_ms, double value) noexcept;

  // Nothing here is written per request: the window's counters live in per-shard lines of their
  // own (breaker_window), the state word changes only on transitions. So the object needs no
  // padding inside; it starts a cache line of its own so no neighbour's writes evict it.
  std::atomic<std::int64_t> word_;  // written by transitions only; read by every entry
  breaker_window window_;

  // Read-only after construction.
  degrade_grade grade_;
  bool slow_grade_;
  double threshold_;
  std::int64_t max_rt_ms_;
  std::uint64_t min_request_amount_;
  std::int64_t recovery_ms_;
  const breaker_observers* observers_;
  degrade_rule rule_;

  std::array<std::array<std::atomic<std::uint64_t>, 3>, 3> transitions_{};
  std::array<std::array<std::uint64_t, 3>, 3> carried_{};  // of transitions_, carried over
};

}  // namespace floodgate::detail
