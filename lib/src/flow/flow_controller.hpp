// One flow rule's traffic-shaping controller, chosen by grade and controlBehavior.
#pragma once

#include "flow/cluster_controller.hpp"
#include "flow/default_controller.hpp"
#include "flow/flow_request.hpp"
#include <floodgate/rules/flow_rule.hpp>
#include "flow/throttling_controller.hpp"
#include "flow/warm_up_controller.hpp"
#include "flow/warm_up_throttling_controller.hpp"

#include <variant>

namespace floodgate::flow::detail {

/** The controller of one rule. Concurrency rules always reject (Sentinel uses DefaultController
    for THREAD whatever the behaviour; validation refuses anything else). Shared between the
    snapshots of equal rules, so its state survives reloads. No virtual dispatch: a variant. */
class flow_controller {
 public:
  /// Throws std::bad_alloc only for a clusterMode rule (its lease).
  explicit flow_controller(const flow_rule& rule) : impl_(make(rule)) {}

  slot_verdict check(const flow_request& req, const selected_node& node, bool can_hold,
                     flow_booking& booking) noexcept {
    switch (impl_.index()) {
      case 0:
        return std::get_if<0>(&impl_)->check(req, node, can_hold, booking);
      case 1:
        return std::get_if<1>(&impl_)->check(req, *node.stats, booking);
      case 2:
        return std::get_if<2>(&impl_)->check(req, booking);
      case 3:
        return std::get_if<3>(&impl_)->check(req, *node.stats, booking);
      default:
        return std::get_if<4>(&impl_)->check(req, node, booking);
    }
  }

  /// The reject controller of a QPS rule, or null.
  default_controller* qps_reject() noexcept {
    auto* c = std::get_if<default_controller>(&impl_);
    return c != nullptr && c->grade() == flow_grade::qps ? c : nullptr;
  }

  /// A new rule that books its own admissions starts from the traffic `node` already counted.
  void seed(const stat::statistic_node& node, std::int64_t now_ms) noexcept {
    if (auto* c = qps_reject()) {
      c->seed(node, now_ms);
    }
  }

  void refund(std::int64_t window, std::uint32_t acquire) noexcept {
    if (auto* c = std::get_if<default_controller>(&impl_)) {
      c->refund(window, acquire);
    } else if (auto* k = std::get_if<cluster_controller>(&impl_)) {
      k->refund(window, acquire);
    }
  }

  /// Gives back a throttling place or a spaced cold pass (flow_booking::queued) of a request
  /// blocked later.
  void unqueue(std::int64_t from_ns, std::int64_t to_ns) noexcept {
    if (auto* c = std::get_if<throttling_controller>(&impl_)) {
      c->unqueue(from_ns, to_ns);
    } else if (auto* w = std::get_if<warm_up_throttling_controller>(&impl_)) {
      w->unqueue(from_ns, to_ns);
    } else if (auto* u = std::get_if<warm_up_controller>(&impl_)) {
      u->unqueue(from_ns, to_ns);
    }
  }

  /// The lease of a clusterMode rule, or null.
  const std::shared_ptr<cluster_lease>* lease() const noexcept {
    const auto* c = std::get_if<cluster_controller>(&impl_);
    return c != nullptr ? &c->lease() : nullptr;
  }

  /// A changed concurrency rule takes over `earlier`'s in-flight slots
  /// (default_controller::take_over_slots).
  void take_over_slots(const std::shared_ptr<flow_controller>& earlier) noexcept {
    auto* mine = std::get_if<default_controller>(&impl_);
    auto* theirs = std::get_if<default_controller>(&earlier->impl_);
    if (mine != nullptr && theirs != nullptr && mine->grade() == flow_grade::concurrency &&
        theirs->grade() == flow_grade::concurrency) {
      mine->take_over_slots(*theirs, earlier);
    }
  }

  void release() noexcept {
    if (auto* c = std::get_if<default_controller>(&impl_)) {
      c->release();
    }
  }
  void unreserve(std::uint32_t acquire) noexcept {
    if (auto* c = std::get_if<default_controller>(&impl_)) {
      c->unreserve(acquire);
    }
  }

 private:
  using variant = std::variant<default_controller, warm_up_controller, throttling_controller,
                               warm_up_throttling_controller, cluster_controller>;

  static variant make(const flow_rule& r) {
    if (r.cluster_mode) {
      return variant(std::in_place_index<4>);
    }
    if (r.grade == flow_grade::concurrency) {
      return variant(std::in_place_index<0>, r.grade, r.count);
    }
    switch (r.behavior) {
      case control_behavior::warm_up:
        return variant(std::in_place_index<1>, r.count, r.warm_up_period_sec);
      case control_behavior::throttling:
        return variant(std::in_place_index<2>, r.count, r.max_queueing_time_ms);
      case control_behavior::warm_up_throttling:
        return variant(std::in_place_index<3>, r.count, r.warm_up_period_sec,
                       r.max_queueing_time_ms);
      case control_behavior::reject:
        break;
    }
    return variant(std::in_place_index<0>, r.grade, r.count);
  }

  variant impl_;
};

}  // namespace floodgate::flow::detail
