// Every Prometheus metric floodgate exports (SPEC §6), declared once.
#pragma once

#include <string_view>

namespace floodgate::beast::metrics {

/// A metric's name and help text; its type is fixed by the collector.
struct metric_info {
  std::string_view name;
  std::string_view help;
};

inline constexpr metric_info requests_total{
    "floodgate_requests_total", "Entries into a resource, by result (passed or blocked)."};
inline constexpr metric_info blocked_requests_total{
    "floodgate_blocked_requests_total", "Blocked entries, by the kind of rule that blocked them."};
inline constexpr metric_info dry_run_blocks_total{
    "floodgate_dry_run_blocks_total",
    "Blocks that dryRun flow rules counted instead of making (the requests passed), one per rule."};
inline constexpr metric_info completed_requests_total{
    "floodgate_completed_requests_total", "Passed entries that completed, by outcome."};
inline constexpr metric_info request_duration_seconds{
    "floodgate_request_duration_seconds", "Duration of passed entries, observed when they complete."};
inline constexpr metric_info inflight_requests{
    "floodgate_inflight_requests", "Entries of a resource currently in flight."};
inline constexpr metric_info circuit_breaker_state{
    "floodgate_circuit_breaker_state", "1 for the circuit breaker's current state, 0 for the others."};
inline constexpr metric_info circuit_breaker_transitions_total{
    "floodgate_circuit_breaker_transitions_total", "Circuit breaker state changes."};
inline constexpr metric_info adaptive_drop_ratio{
    "floodgate_adaptive_drop_ratio",
    "Share of requests an adaptive (Google SRE) breaker drops now: "
    "max(0, (requests - k * accepts) / (requests + 1)) over its window."};
inline constexpr metric_info hot_keys{
    "floodgate_hot_keys", "Values of a tracked parameter above its rule's threshold in the window."};
inline constexpr metric_info hot_key_top_requests{
    "floodgate_hot_key_top_requests",
    "Requests in the window with the most requested value of a tracked parameter."};
inline constexpr metric_info hot_key_events_total{
    "floodgate_hot_key_events_total",
    "Values of a tracked parameter that became hot (cold to hot transitions seen by refreshes)."};
inline constexpr metric_info rules{"floodgate_rules", "Rules in force, by type."};
inline constexpr metric_info rules_reloads_total{
    "floodgate_rules_reloads_total", "Rule file load attempts (the initial load included), by result."};
inline constexpr metric_info rules_last_reload_successful{
    "floodgate_rules_last_reload_successful", "1 if the last rule file load attempt succeeded."};
inline constexpr metric_info resources{"floodgate_resources", "Resources tracked."};
inline constexpr metric_info resource_overflow_total{
    "floodgate_resource_overflow_total", "Entries not tracked because the resource cap was reached."};
inline constexpr metric_info origin_overflow_total{
    "floodgate_origin_overflow_total",
    "Entries whose origin was counted on its resource's shared overflow origin node because the "
    "cap of (resource, origin) pairs, or of one resource's origins, was reached."};
inline constexpr metric_info context_overflow_total{
    "floodgate_context_overflow_total",
    "Context lookups (one per request through the middleware) refused because the cap of "
    "context names was reached; their entries pass untracked."};
inline constexpr metric_info context_pair_overflow_total{
    "floodgate_context_pair_overflow_total",
    "Entries counted on their resource's shared overflow node because the cap of (context, "
    "resource) pairs was reached."};
inline constexpr metric_info system_cpu_usage_ratio{
    "floodgate_system_cpu_usage_ratio", "CPU usage (0..1) as seen by system rules."};
inline constexpr metric_info system_load1{
    "floodgate_system_load1", "1-minute load average as seen by system rules."};
inline constexpr metric_info build_info{
    "floodgate_build_info", "Always 1; the version label says which floodgate is running."};

inline constexpr metric_info cluster_lease_requests_total{
    "floodgate_cluster_lease_requests_total",
    "Lease requests of clusterMode rules sent to Redis, by result."};
inline constexpr metric_info cluster_redis_round_trip_seconds{
    "floodgate_cluster_redis_round_trip_seconds", "Round trips of lease requests to Redis."};
inline constexpr metric_info cluster_mode{
    "floodgate_cluster_mode", "1 for a clusterMode rule's current mode (global or fallback)."};
inline constexpr metric_info cluster_lease_passes_spent_total{
    "floodgate_cluster_lease_passes_spent_total", "Passes spent from leases granted by Redis."};

/// Label names.
inline constexpr std::string_view label_resource = "resource";
inline constexpr std::string_view label_result = "result";
inline constexpr std::string_view label_reason = "reason";
inline constexpr std::string_view label_outcome = "outcome";
inline constexpr std::string_view label_rule = "rule";
inline constexpr std::string_view label_mode = "mode";
inline constexpr std::string_view label_state = "state";
inline constexpr std::string_view label_from = "from";
inline constexpr std::string_view label_to = "to";
inline constexpr std::string_view label_type = "type";
inline constexpr std::string_view label_version = "version";

}  // namespace floodgate::beast::metrics
