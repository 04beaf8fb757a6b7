// The engine: resources, rules in force, and the entry point of the slot chain.
#pragma once

#include <floodgate/chain/clock.hpp>
#include <floodgate/chain/cluster_lease.hpp>
#include <floodgate/engine/context.hpp>
#include <floodgate/engine/entry.hpp>
#include <floodgate/engine/hot_keys.hpp>
#include <floodgate/chain/entry_options.hpp>
#include <floodgate/chain/slot.hpp>
#include <floodgate/degrade/circuit_breaker.hpp>
#include <floodgate/node/registry_limits.hpp>
#include <floodgate/rules/rule_set.hpp>
#include <floodgate/stat/window_config.hpp>
#include <floodgate/system/system_status.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

namespace floodgate {

namespace detail {
class engine_impl;
struct engine_access;
}
namespace node {
class cluster_node;
class node_registry;
}  // namespace node

/** A resource resolved once: entering by handle skips hashing and looking up the name.
    Obtained from @ref engine::resource; empty when the resource cap was reached (entries then
    pass unchecked, as with a name). Valid for the engine's life. */
class resource_handle {
 public:
  resource_handle() noexcept = default;
  explicit operator bool() const noexcept { return node_ != nullptr; }
  /// The resource's name; empty for an empty handle.
  std::string_view name() const noexcept;

 private:
  friend class engine;
  explicit resource_handle(node::cluster_node* n) noexcept : node_(n) {}
  node::cluster_node* node_ = nullptr;
};

/// Engine configuration; fixed for the engine's life.
struct engine_options {
  node::registry_limits limits{};
  stat::window_config windows{};
  /// Longest a prioritized entry may borrow ahead, >= 0 (the constructor throws
  /// std::invalid_argument otherwise); more than windows.second_interval_ms is cut to it.
  std::int64_t occupy_timeout_ms = 500;
  /// Time source; must outlive the engine. Null means the process steady clock.
  const clock* time = nullptr;
  /// Load / CPU readings for system rules. Null means the process sampler, started only when
  /// system rules are loaded.
  std::shared_ptr<const system_status_source> system_status;
  /// Track the values of every paramFlow rule's parameter (hot keys; 412 KiB per rule on 2
  /// CPUs, more with more CPUs or a larger `top`: README, "Hot keys").
  bool track_param_flow_values = true;
  /** How often the engine's hot-key ticker refreshes hot keys and tells observers, once one is
      registered; 0: no ticker (refresh_hot_keys() is then up to the application, the admin API
      and metrics scrapes). */
  std::int64_t hot_key_refresh_ms = 1000;
};

/** The strictest QPS limit that applied to an entry, for response headers that tell clients
    their limit (the IETF RateLimit fields, Envoy's `x-ratelimit-*`). A plain value.

    Of the entry's QPS flow rules with the reject behaviour and the direct strategy that apply to
    its origin, the one with the fewest passes left (then the lowest count). `remaining` is what
    the rule's node has left in the current one-second window after this entry, as the rule
    reads it (`count` minus the window's passes, Sentinel's `(int) passQps`); 0 for the rule
    that blocked the entry. `reset` is the time until every pass the window counts now has slid
    out of it (the whole quota is back then; 0 when the window is empty). */
struct quota_status {
  std::uint64_t limit = 0;      ///< the rule's count per second, truncated
  std::uint64_t remaining = 0;  ///< passes left in the window now
  std::chrono::milliseconds reset{0};
  std::int32_t rule_index = -1;  ///< the rule's place in the flow section; -1: no QPS rule applied
  explicit operator bool() const noexcept { return rule_index >= 0; }
};

/// Outcome of @ref engine::load_rules: either applied, or rejected with every problem found.
struct load_result {
  std::vector<rule_error> errors;
  bool ok() const noexcept { return errors.empty(); }
  explicit operator bool() const noexcept { return ok(); }
};

/** The flow-control engine: owns the statistics tree and the rules in force, and runs the slot
    chain (node selector → cluster builder → statistic → authority → system → param flow → flow →
    degrade, plus user slots by order) for every entry.

    @par Thread Safety
    enter() and exit are lock-free and never allocate once a resource's nodes exist; they may run
    on any number of threads. load_rules() and add_slot() may run concurrently with them and with
    each other: a rule set is published atomically and never blocks requests.

    @par Example
    @code
    floodgate::engine eng;
    eng.load_rules({.flow = {{.resource = "GET:/hello", .count = 100}}});
    floodgate::context ctx{eng, "http-inbound", "billing"};
    auto e = eng.enter(ctx, "GET:/hello", {.type = floodgate::entry_type::inbound});
    if (!e) { reply_429(e.block().retry_after); }
    @endcode
*/
class engine {
 public:
  /// Throws std::invalid_argument when `options.windows` is not a valid window shape, a cap in
  /// `options.limits` is over registry_limits::max_cap, or `occupy_timeout_ms` is negative.
  explicit engine(engine_options options = {});
  /// Every context and entry of this engine must be gone first: an entry exits into the engine's
  /// statistics, so one left over (an in-flight request) would exit into freed memory.
  ~engine();
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;

  /// Enters `resource` within `ctx`. Never throws; an internal failure lets the entry pass.
  entry enter(context& ctx, std::string_view resource, const entry_options& options = {}) noexcept;
  /// Enters a resource resolved with resource(); the cheapest way on a hot path.
  entry enter(context& ctx, resource_handle resource, const entry_options& options = {}) noexcept;
  /** The strictest QPS limit that applied to `e`, entered (passed or blocked) within `ctx`, as
      of now; empty when no such rule applies (or the entry passed unchecked). Lock-free and
      never allocates; the request path calls it only when it reports limits to clients. */
  quota_status quota(const context& ctx, const entry& e) const noexcept;
  /// Resolves (creating on first use) a resource; empty past the resource cap.
  resource_handle resource(std::string_view name) noexcept;
  /// Resolves (creating on first use) a context name; empty past the context-name cap.
  entrance_handle entrance(std::string_view name) noexcept;

  /** Validates `rules` whole and, if valid, publishes them atomically. Rules that did not change
      keep their state (warm-up tokens, throttling position, breaker state). On any error nothing
      changes and every problem is returned. */
  load_result load_rules(const rule_set& rules);
  /// The rules in force.
  rule_set rules() const;
  /// Incremented by every successful load_rules().
  std::uint64_t rules_version() const noexcept;

  /// Adds a slot to every resource's chain, ordered by its order(). Throws
  /// std::invalid_argument when `s` is null.
  void add_slot(std::shared_ptr<slot> s);
  /// Registers a breaker state-change observer.
  void add_breaker_observer(breaker_observer observer);

  /// Calls `f(resource, breaker, rule_index)` for every breaker in force (control plane).
  void for_each_breaker(
      const std::function<void(std::string_view, const circuit_breaker&, std::int32_t)>& f) const;

  /** The tracked values of `resource` (hotKeys rules and paramFlow rules), each rule's top
      values, highest count first; empty for a resource without such rules. Refreshes first
      (control plane; const because it changes no rule or statistic, only what the last refresh
      found). */
  std::vector<hot_key> hot_keys(std::string_view resource) const;
  /** Whether `value` is hot for `resource` now: above the threshold of any rule tracking a
      parameter of it. Lock-free and allocation-free: a request handler may ask (e.g. to serve a
      hot key from a local cache). */
  bool is_hot(std::string_view resource, const param_value& value) const noexcept;
  /** Registers an observer of hot/cold transitions (see hot_key_observer for where it runs);
      starts the hot-key ticker unless engine_options::hot_key_refresh_ms is 0. */
  void add_hot_key_observer(hot_key_observer observer);
  /** Recounts every tracked parameter's window, works out which values became hot or cold since
      the last refresh, counts the cold -> hot events and tells the observers. Control plane;
      serialized with other refreshes. */
  void refresh_hot_keys() const;
  /// Refreshes, then each tracked parameter's counts (for metrics).
  std::vector<hot_key_rule_stats> hot_key_stats() const;
  /** Calls `f(rule, rule_index, lease)` for every clusterMode flow rule in force (control plane):
      how a cluster token source (floodgate/cluster/) finds the leases it feeds. `rule_index` is
      the rule's index in the `flow` section. An unchanged rule keeps its lease across reloads. */
  void for_each_cluster_rule(
      const std::function<void(const flow_rule&, std::int32_t,
                               const std::shared_ptr<cluster_lease>&)>& f) const;

  const clock& time() const noexcept;
  /// Requests in flight over every resource (e.g. to drain before shutting down).
  std::int64_t in_flight() const noexcept;
  /// The statistics tree, for readers inside floodgate (admin API, metrics); an internal type.
  node::node_registry& nodes() noexcept;
  const node::node_registry& nodes() const noexcept;
  /// Entries that passed unchecked because an internal error occurred (fail-open).
  std::uint64_t internal_errors() const noexcept;
  /// The rate-limit fields the rules in force ask HTTP responses to carry (`rateLimitHeaders`;
  /// off when they say nothing). One relaxed load: the middleware reads it per request.
  rate_limit_header_style rate_limit_headers() const noexcept;
  /// The readings system rules use (null until system rules were loaded, unless injected).
  std::shared_ptr<const system_status_source> system_status() const;

 private:
  friend struct detail::engine_access;
  std::unique_ptr<detail::engine_impl> impl_;
};

}  // namespace floodgate
