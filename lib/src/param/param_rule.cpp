#include "param/param_rule.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace floodgate::param_detail {

namespace {

std::int64_t ceil_ms(std::int64_t ns) noexcept {
  return std::max<std::int64_t>(1, (ns + 999'999) / 1'000'000);
}

}  // namespace

std::size_t value_capacity(const param_flow_rule& rule) noexcept {
  const auto duration = static_cast<std::size_t>(std::max(rule.duration_in_sec, 1));
  return std::min<std::size_t>(4000 * duration, 200'000);
}

/// A paramFlow rule's values are watched over its own duration, with its count as threshold:
/// a hot value is one the rule is limiting.
rule_state::rule_state(const param_flow_rule& rule, bool track_values)
    : hasher(random_seed()), table(value_capacity(rule)) {
  if (track_values) {
    tracker = std::make_unique<hot_key_tracker>(
        hasher, std::int64_t{std::max(rule.duration_in_sec, 1)} * 1000, 20, rule.count);
  }
}

param_rule::param_rule(const param_flow_rule& rule, std::int32_t index,
                       std::shared_ptr<rule_state> state)
    : rule_(rule),
      index_(index),
      algorithm_(rule.grade == flow_grade::concurrency           ? algorithm::in_flight
                 : rule.behavior == control_behavior::throttling ? algorithm::spacing
                 : rule.items.empty()                            ? algorithm::tokens
                                                                 : algorithm::tokens_with_items),
      state_(std::move(state)),
      tokens_(clamp_tokens(rule.count)),
      max_tokens_(bucket_size(tokens_)),
      duration_ms_(std::int64_t{std::max(rule.duration_in_sec, 1)} * 1000) {
  // A later item for the same value wins, as in Sentinel's item map.
  std::map<value_key, double> by_key;
  for (const auto& it : rule_.items) {
    by_key[state_->hasher(it.value)] = it.count;
  }
  for (const auto& [key, count] : by_key) items_.push_back({key, count});
}

double param_rule::threshold_of(value_key key) const noexcept {
  if (items_.empty()) return rule_.count;
  const auto it = std::lower_bound(items_.begin(), items_.end(), key,
                                   [](const item& a, const value_key& k) { return a.key < k; });
  return it != items_.end() && it->key == key ? it->count : rule_.count;
}

std::int64_t param_rule::clamp_tokens(double count) noexcept {
  if (!(count > 0)) return 0;
  if (count >= static_cast<double>(token_mask)) return static_cast<std::int64_t>(token_mask);
  return static_cast<std::int64_t>(count);  // Sentinel truncates: (long) count
}

slot_verdict param_rule::blocked(const param_value& value,
                                 std::int64_t retry_after_ms) const noexcept {
  block_info b;
  b.reason = block_reason::param_flow;
  b.rule_index = index_;
  b.retry_after = std::chrono::milliseconds(retry_after_ms);
  b.subject = value;  // the caller's value: valid as long as its arguments are
  return slot_verdict::blocked(b);
}

// Sentinel's passThrottleLocalCheck: passes per value spaced costTime apart; a pass due within
// maxQueueingTimeMs waits for its turn (returned as a wait, never slept here).
param_rule::decision param_rule::check_spacing(const check_context& ctx, value_key key,
                                               std::int64_t token_count) const noexcept {
  if (token_count == 0) return refuse(0);
  // Capped, so that a huge acquire (or duration) can neither overflow the sum below nor round
  // to a negative cost: 2^62 ns is 146 years, past any wait.
  const auto cost_ns = static_cast<std::int64_t>(std::min(
      1e9 * ctx.acquire * rule_.duration_in_sec / static_cast<double>(token_count), 0x1p62));
  // ctx.now_ns has millisecond resolution; spacing below a millisecond needs the clock itself.
  const std::int64_t now = ctx.time.now_ns();
  bool inserted = false;
  const auto slot = state_->table.find_or_insert(key, static_cast<std::uint64_t>(now), inserted);
  if (!slot || inserted) return pass();

  const std::int64_t max_queue_ns = std::int64_t{rule_.max_queueing_time_ms} * 1'000'000;
  std::uint64_t word = slot.state->load(std::memory_order_relaxed);
  while (true) {
    const std::int64_t expected = static_cast<std::int64_t>(word) + cost_ns;
    const std::int64_t wait = expected - now;
    if (wait > 0 && wait >= max_queue_ns) return refuse(ceil_ms(wait - max_queue_ns));
    // Due now: the next pass is spaced from now. Due later: book the turn at `expected`.
    const std::int64_t next = wait <= 0 ? now : expected;
    if (slot.state->compare_exchange_weak(word, static_cast<std::uint64_t>(next),
                                          std::memory_order_relaxed)) {
      return wait <= 0 ? pass() : decision{slot_verdict::kind::wait, wait};
    }
  }
}

// Per-value concurrency: counted here rather than after all checks (as Sentinel's statistic
// callback does) so that racing entries cannot overshoot; released on exit or a later block.
param_rule::decision param_rule::check_in_flight(value_key key, double threshold,
                                                 entry_tokens& tokens) const noexcept {
  if (tokens.param_held_count >= tokens.param_held.size()) {
    return pass();  // no room to remember another counter: not limited
  }
  bool inserted = false;
  const auto slot = state_->table.find_or_insert(key, 0, inserted);
  if (!slot) return pass();
  const std::int32_t count = state_->table.acquire_in_flight(key, slot);
  if (count == 0) return pass();
  if (count > threshold) {
    slot.in_flight->fetch_sub(1, std::memory_order_release);
    return refuse(0);
  }
  tokens.param_held[tokens.param_held_count++] = slot.in_flight;
  return pass();
}

}  // namespace floodgate::param_detail
