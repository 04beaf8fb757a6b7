// Circuit breakers: Sentinel 1.8's CLOSED -> OPEN -> HALF_OPEN state machine.
#pragma once

#include <floodgate/rules/degrade_rule.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

namespace floodgate {

/** A breaker's state. The binary breakers (Sentinel's grades) move between `closed`, `open` and
    `half_open`; an adaptive breaker (grade adaptive) is always `adaptive`: it has no states, only
    a drop ratio (@ref circuit_breaker::adaptive). */
enum class breaker_state : std::uint8_t { closed = 0, open = 1, half_open = 2, adaptive = 3 };
/// `closed`, `open`, `half_open` or `adaptive`.
std::string_view to_string(breaker_state s) noexcept;

/** Called on every state change with the previous and next state, the rule and the value that
    triggered it (ratio or count; none for OPEN -> HALF_OPEN and HALF_OPEN -> CLOSED). Runs on the
    request thread that caused the change: it must be quick and must not block. */
using breaker_observer = std::function<void(breaker_state from, breaker_state to,
                                            const degrade_rule& rule, std::optional<double> value)>;

/** The engine's list of breaker observers. Registering takes a lock; notifying does not: the
    list is published as an immutable copy on each add(), and every published copy is kept until
    the registry is destroyed (observers are registered a few times per engine, not per request).

    @par Thread Safety
    add() from any thread; notify() from request threads, concurrently with add().
*/
class breaker_observers {
 public:
  breaker_observers();
  ~breaker_observers();
  breaker_observers(const breaker_observers&) = delete;
  breaker_observers& operator=(const breaker_observers&) = delete;

  /// Registers `observer`; it sees every transition from now on.
  void add(breaker_observer observer);
  /// Calls every observer in registration order; lock-free. An observer that throws is skipped.
  void notify(breaker_state from, breaker_state to, const degrade_rule& rule,
              std::optional<double> value) const noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/** What an adaptive breaker sees in its window at one moment (Google SRE client-side
    throttling). `requests` counts every request the breaker decided on and that is over: those
    that completed and those it dropped; `accepts` the completed ones that were not errors. */
struct adaptive_window_state {
  std::uint64_t requests = 0;
  std::uint64_t accepts = 0;
  /// `max(0, (requests - k * accepts) / (requests + 1))`, or 0 below minRequestAmount requests.
  double drop_ratio = 0;
};

/** One circuit breaker (Sentinel's AbstractCircuitBreaker and its two kinds, or an adaptive
    breaker). Read-only view for metrics and the admin API; the degrade slot drives it.

    @par Thread Safety
    Every member may be read from any thread while requests drive the breaker.
*/
class circuit_breaker {
 public:
  virtual ~circuit_breaker() = default;
  /// The rule the breaker was built from (kept across reloads that leave it unchanged).
  virtual const degrade_rule& rule() const noexcept = 0;
  /// The current state; a reader may see it change right after.
  virtual breaker_state state() const noexcept = 0;
  /// When OPEN: the time (ms on the engine clock) from which the next probe may pass. In other
  /// states: the last such time (0 before the breaker first opened); not meaningful.
  virtual std::int64_t next_retry_ms() const noexcept = 0;
  /// Number of `from` -> `to` transitions since the breaker was created, those it carried over
  /// included (monotonic; for `floodgate_circuit_breaker_transitions_total`).
  virtual std::uint64_t transitions(breaker_state from, breaker_state to) const noexcept = 0;
  /** Of transitions(), those carried over when the breaker was built: a changed rule's breaker
      starts from the counts of the one it replaces under the same label (its name, else its
      place in the file), so a reader that last saw that one can tell what it missed. */
  virtual std::uint64_t carried_transitions(breaker_state from, breaker_state to) const noexcept {
    (void)from;
    (void)to;
    return 0;
  }
  /// For an adaptive breaker: its window at `now_ms` (engine clock). Empty for the others.
  virtual std::optional<adaptive_window_state> adaptive(std::int64_t now_ms) const noexcept {
    (void)now_ms;
    return std::nullopt;
  }
  /** A number no other breaker of the process had: tells a new breaker from an old one, which a
      new one may replace at the same address (a reader keeping addresses would take the two
      for one). */
  std::uint64_t serial() const noexcept { return serial_; }

 private:
  static std::uint64_t next_serial() noexcept;
  std::uint64_t serial_ = next_serial();
};

}  // namespace floodgate
