// Entry: the RAII result of entering a resource.
#pragma once

#include <floodgate/chain/block.hpp>
#include <floodgate/chain/entry_type.hpp>
#include <floodgate/chain/slot.hpp>

#include <chrono>
#include <cstdint>
#include <string_view>

namespace floodgate {

class context;
class engine;
namespace detail {
class engine_impl;
struct resource_rules;
struct rule_snapshot;
}  // namespace detail

/** The result of @ref engine::enter: either a pass, to be exited exactly once, or a block.

    A passed entry is move-only and exits in its destructor unless @ref exit was called; exit
    records the response time, success and any traced error, and runs the slots' exit work. It may
    exit on another thread than the one that entered. A passed entry may carry a @ref wait: the
    caller must delay the work by that long first (throttling) — the engine never sleeps. With
    entry_options::proceeds_after_wait the caller then calls @ref proceed, and the entry is
    counted as passed and in flight from then, as Sentinel counts a throttled request after its
    flow slot's sleep: while it waits, what reads the node statistics (a concurrency rule on a
    shared node, system maxThread, warm-up throttling's rate, the metrics) does not count it.
    The flow rules that decide when the wait ends may block it then (proceed() returns false).
    One that exits without proceeding is counted at its exit (as a pass, or as that block).

    A blocked entry carries its @ref block_info and has nothing to exit.

    @par Thread Safety
    One entry must not be used by two threads at once.
*/
class [[nodiscard]] entry {
 public:
  entry() noexcept = default;
  entry(entry&& other) noexcept;
  entry& operator=(entry&& other) noexcept;
  entry(const entry&) = delete;
  entry& operator=(const entry&) = delete;
  ~entry() { exit(); }

  bool passed() const noexcept { return status_ == status::passed || status_ == status::exited; }
  bool blocked() const noexcept { return status_ == status::blocked; }
  explicit operator bool() const noexcept { return passed(); }

  /// Why the entry was blocked; a default block_info unless blocked().
  const block_info& block() const noexcept { return blocked() ? out_.block : no_block; }
  /// How long the caller must wait before doing the work (throttling, prioritized borrowing).
  std::chrono::nanoseconds wait() const noexcept { return std::chrono::nanoseconds{wait_ns_}; }

  /** The @ref wait is over and the work starts: counts the pass and the request in flight
      (entry_options::proceeds_after_wait). Does nothing otherwise, or once called. Returns
      false when the entry is blocked: a resource that queues requests checks its QPS reject
      and warm-up rules when the wait ends, as Sentinel's FlowSlot does after its sleep, and one
      of them may block the entry then — it is then blocked() with its block(), holds nothing,
      and the work must not run. */
  [[nodiscard]] bool proceed() noexcept;

  /// Marks the entry as failed (Sentinel's Tracer): counted as an exception, seen by breakers.
  void trace_error() noexcept { error_ = true; }

  /// Exits now; later calls (and the destructor) do nothing.
  void exit() noexcept;

  /// The resource name; empty for an entry that passed unchecked (past a cap).
  std::string_view resource() const noexcept;
  /// True when the entry passed without any check or statistics (a cap was reached).
  bool unchecked() const noexcept { return passed() && cluster_ == nullptr; }

 private:
  friend class engine;
  friend class detail::engine_impl;
  enum class status : std::uint8_t { empty, passed, blocked, exited };

  /// What a checked pass holds until its exit (filled by the engine).
  struct pass_state {
    context* ctx;
    node::cluster_node* cluster;
    node::default_node* node;
    node::origin_node* origin_node;
    node::default_node* parent;  ///< the context's current node before this entry
    const detail::resource_rules* rules;
    const detail::rule_snapshot* snapshot;
    std::int64_t create_ms;
    std::int64_t create_ns;
    std::int64_t wait_ns;
    std::int32_t depth;
    std::uint8_t pin_stripe;
    std::uint16_t pin_slot;
    bool precise;
    bool counted;  ///< false: the pass is counted when the entry proceeds (it has a wait)
  };

  /// A pass that passed unchecked (null context, past a cap).
  entry(detail::engine_impl* engine, std::uint32_t acquire, entry_type type) noexcept
      : engine_(engine), acquire_(acquire), type_(type), status_(status::passed) {}
  /// A checked pass: every member set once, no zero-fill first.
  entry(detail::engine_impl* engine, std::uint32_t acquire, entry_type type, const pass_state& p,
        const entry_tokens& tokens) noexcept
      : engine_(engine),
        ctx_(p.ctx),
        cluster_(p.cluster),
        node_(p.node),
        origin_node_(p.origin_node),
        parent_(p.parent),
        rules_(p.rules),
        snapshot_(p.snapshot),
        create_ms_(p.create_ms),
        create_ns_(p.create_ns),
        wait_ns_(p.wait_ns),
        acquire_(acquire),
        depth_(p.depth),
        pin_stripe_(p.pin_stripe),
        pin_slot_(p.pin_slot),
        type_(type),
        status_(status::passed),
        error_(false),
        precise_(p.precise),
        counted_(p.counted),
        out_(tokens) {}
  /// A block.
  entry(detail::engine_impl* engine, std::uint32_t acquire, entry_type type,
        node::cluster_node* cluster, node::origin_node* origin, const block_info& b) noexcept
      : engine_(engine),
        cluster_(cluster),
        origin_node_(origin),
        acquire_(acquire),
        type_(type),
        status_(status::blocked),
        out_(b) {}

  void reset_moved() noexcept;

  detail::engine_impl* engine_ = nullptr;
  context* ctx_ = nullptr;
  node::cluster_node* cluster_ = nullptr;
  node::default_node* node_ = nullptr;
  node::origin_node* origin_node_ = nullptr;  ///< also kept by a block (engine::quota)
  node::default_node* parent_ = nullptr;  // restored as the context's current node on exit
  const detail::resource_rules* rules_ = nullptr;
  const detail::rule_snapshot* snapshot_ = nullptr;  // pinned until exit
  std::int64_t create_ms_ = 0;
  std::int64_t create_ns_ = 0;  ///< start of the duration (create_ms_ in ns unless precise_)
  std::int64_t wait_ns_ = 0;
  std::uint32_t acquire_ = 1;
  std::int32_t depth_ = -1;
  std::uint8_t pin_stripe_ = 0;
  std::uint16_t pin_slot_ = 0;
  entry_type type_ = entry_type::outbound;
  status status_ = status::empty;
  bool error_ = false;
  bool precise_ = false;
  bool counted_ = true;  // false until a waiting entry proceeds (or exits)
  /// A passed entry needs its slots' tokens, a blocked one only its block: one of the two.
  union outcome {
    entry_tokens tokens;
    block_info block;
    constexpr outcome() noexcept : tokens{} {}
    constexpr explicit outcome(const entry_tokens& t) noexcept : tokens(t) {}
    constexpr explicit outcome(const block_info& b) noexcept : block(b) {}
  };
  outcome out_;
  static constexpr block_info no_block{};
};

}  // namespace floodgate
