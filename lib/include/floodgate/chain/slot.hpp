// The slot-chain contract: what each checking slot sees on entry and exit, and what it answers.
#pragma once

#include <floodgate/chain/block.hpp>
#include <floodgate/chain/clock.hpp>
#include <floodgate/chain/entry_options.hpp>
#include <floodgate/chain/entry_type.hpp>
#include <floodgate/chain/param_value.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace floodgate {

namespace node {
class cluster_node;
class default_node;
class origin_node;
class node_registry;
}  // namespace node

/// Built-in slot orders (Sentinel's); user slots run between them by their own order.
namespace slot_order {
inline constexpr int node_selector = -10000;
inline constexpr int cluster_builder = -9000;
inline constexpr int statistic = -7000;
inline constexpr int authority = -6000;
inline constexpr int system = -5000;
inline constexpr int param_flow = -3000;
inline constexpr int flow = -2000;
inline constexpr int degrade = -1000;
}  // namespace slot_order

/** What the checking slots of one entry hold until it exits: in-flight slots taken, half-open
    probes won, admissions booked. Fixed size: the request path never allocates. */
struct entry_tokens {
  std::uint32_t flow_held = 0;      ///< bit i: holds an in-flight slot of flow rule i
  std::uint32_t flow_admitted = 0;  ///< bit i: booked a pass in flow rule i's admission window
  std::int64_t flow_admit_window = 0;
  std::uint32_t breaker_probe = 0;  ///< bit i: this entry is breaker i's half-open probe
  /// The flow slot already booked this entry's pass in a future window (prioritized borrowing):
  /// the statistic slot then counts concurrency only, as Sentinel does for PriorityWaitException.
  bool pass_booked = false;
  std::uint8_t param_held_count = 0;
  /// Bit i: took a place in throttling flow rule i's queue, moving its schedule from
  /// flow_queue_from_ns to flow_queue_to_ns (one place is kept per entry; set only with the bit).
  std::uint32_t flow_queued = 0;
  /// Bit i: holds a reservation of flow rule i, which counts the entry until its pass is
  /// recorded on the node the rule reads (chain rules on a node other entries also write).
  std::uint32_t flow_reserved = 0;
  /// Bit i: flow rule i decides when the entry's wait ends (a QPS reject rule of a resource
  /// that queues requests: the pass lands then, in the window it must fit).
  std::uint32_t flow_after_wait = 0;
  std::int64_t flow_queue_from_ns;
  std::int64_t flow_queue_to_ns;
  /// Per-value in-flight counters held: the first param_held_count are set (the rest are
  /// never read, so they are not zeroed on every entry).
  std::array<void*, 4> param_held;
};

/// Everything a slot may look at when an entry is checked.
struct check_context {
  std::int64_t now_ms;  ///< the entry's time (clock::now_ms(), cheap)
  std::int64_t now_ns;  ///< now_ms in nanoseconds; call time.now_ns() when sub-ms precision matters
  const clock& time;
  std::string_view resource;
  std::string_view context_name;
  std::string_view origin;
  entry_type type;
  std::uint32_t acquire;
  bool prioritized;
  std::span<const param_value> args;
  param_extractor params;
  node::cluster_node& cluster;
  node::default_node& node;
  node::origin_node* origin_node;  ///< null when the origin is empty or past the origin cap
  node::node_registry& registry;   ///< for RELATE lookups and the global inbound node
  std::int64_t occupy_timeout_ms;
  /// now_ms was read from the clock for this entry (entry_options::precise_duration), not taken
  /// from the millisecond word a ticker thread refreshes (which a busy machine may leave stale).
  bool now_is_fresh = false;
  /// The caller proceeds when a wait ends (entry_options::proceeds_after_wait): checks that
  /// concern the moment the pass lands may wait for it.
  bool proceeds_after_wait = false;
};

/// Everything a slot may look at when an entry exits.
struct exit_context {
  std::int64_t now_ms;
  std::int64_t now_ns;  ///< now_ms in nanoseconds
  std::int64_t create_ms;
  std::int64_t rt_ms;
  bool error;
  std::uint32_t acquire;
  node::cluster_node& cluster;
  node::default_node& node;
  node::origin_node* origin_node;
};

/** A slot's answer: let the entry go on, block it, or let it pass after waiting.

    `block` is set only when `outcome` is `block`: a pass or a wait writes two words, not the
    whole block description, since every slot of every entry returns one. */
struct slot_verdict {
  enum class kind : std::uint8_t { pass, block, wait };
  kind outcome = kind::pass;
  std::int64_t wait_ns = 0;
  union {
    unsigned char unset_;
    block_info block;  ///< why and for how long; valid when outcome == kind::block
  };

  constexpr slot_verdict() noexcept : unset_(0) {}

  static constexpr slot_verdict pass() noexcept { return {}; }
  static constexpr slot_verdict blocked(const block_info& b) noexcept {
    slot_verdict v;
    v.outcome = kind::block;
    v.block = b;
    return v;
  }
  static constexpr slot_verdict wait(std::int64_t ns) noexcept {
    slot_verdict v;
    v.outcome = kind::wait;
    v.wait_ns = ns;
    return v;
  }
};

/** A user-defined slot, run at its `order()` among the built-in slots of every resource.

    `on_entry` may block (reason `custom`) or ask the caller to wait; it must not throw, block the
    thread or allocate. `on_exit` runs for every entry that passed, after the statistics.
*/
class slot {
 public:
  virtual ~slot() = default;
  virtual int order() const noexcept = 0;
  virtual slot_verdict on_entry(const check_context& ctx) noexcept = 0;
  virtual void on_exit(const exit_context&) noexcept {}
};

}  // namespace floodgate
