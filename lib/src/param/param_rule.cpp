#include "param/param_rule.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace floodgate::param_detail {

namespace {

// A token bucket is one atomic word: (ms since the rule's epoch) << token_bits | tokens left.
// 38 bits of time last 8.7 years; 26 bits of tokens allow 67 million per value per duration
// (larger counts are clamped to that).
constexpr int token_bits = 26;
constexpr std::uint64_t token_mask = (std::uint64_t{1} << token_bits) - 1;
constexpr std::int64_t time_max = (std::int64_t{1} << (64 - token_bits)) - 1;
constexpr std::int64_t no_epoch = std::numeric_limits<std::int64_t>::min();

constexpr std::uint64_t pack(std::int64_t time, std::int64_t tokens) noexcept {
  return (static_cast<std::uint64_t>(time) << token_bits) | static_cast<std::uint64_t>(tokens);
}
constexpr std::int64_t time_of(std::uint64_t word) noexcept {
  return static_cast<std::int64_t>(word >> token_bits);
}
constexpr std::int64_t tokens_of(std::uint64_t word) noexcept {
  return static_cast<std::int64_t>(word & token_mask);
}

std::int64_t clamp_tokens(double count) noexcept {
  if (!(count > 0)) return 0;
  if (count >= static_cast<double>(token_mask)) return static_cast<std::int64_t>(token_mask);
  return static_cast<std::int64_t>(count);  // Sentinel truncates: (long) count
}

std::int64_t ceil_ms(std::int64_t ns) noexcept {
  return std::max<std::int64_t>(1, (ns + 999'999) / 1'000'000);
}

}  // namespace

std::size_t value_capacity(const param_flow_rule& rule) noexcept {
  const auto duration = static_cast<std::size_t>(std::max(rule.duration_in_sec, 1));
  return std::min<std::size_t>(4000 * duration, 200'000);
}

rule_state::rule_state(const param_flow_rule& rule)
    : seed(random_seed()), table(value_capacity(rule)), epoch_ms(no_epoch) {}

param_rule::param_rule(const param_flow_rule& rule, std::int32_t index,
                       std::shared_ptr<rule_state> state)
    : rule_(rule),
      index_(index),
      state_(std::move(state)),
      duration_ms_(std::int64_t{std::max(rule.duration_in_sec, 1)} * 1000) {
  // A later item for the same value wins, as in Sentinel's item map.
  std::map<value_key, double> by_key;
  for (const auto& it : rule_.items) {
    by_key[hash_value(it.value, state_->seed)] = it.count;
  }
  for (const auto& [key, count] : by_key) items_.push_back({key, count});
}

bool param_rule::value_of(const check_context& ctx, param_value& out) const noexcept {
  if (rule_.param_idx) {
    // A negative index counts from the end; out of range means the rule does not apply.
    const auto n = static_cast<std::int64_t>(ctx.args.size());
    std::int64_t i = *rule_.param_idx;
    if (i < 0) i += n;
    if (i < 0 || i >= n) return false;
    out = ctx.args[static_cast<std::size_t>(i)];
  } else if (rule_.param) {
    out = ctx.params(*rule_.param);
  }
  return !out.empty();
}

double param_rule::threshold_of(const value_key& key) const noexcept {
  if (items_.empty()) return rule_.count;
  const auto it = std::lower_bound(items_.begin(), items_.end(), key,
                                   [](const item& a, const value_key& k) { return a.key < k; });
  return it != items_.end() && it->key == key ? it->count : rule_.count;
}

slot_verdict param_rule::check(const check_context& ctx, entry_tokens& tokens) const noexcept {
  param_value value;
  if (!value_of(ctx, value)) return slot_verdict::pass();
  char buffer[integer_text_size];
  const value_key key = hash_value(value_text(value, buffer), state_->seed);
  const double threshold = threshold_of(key);
  const decision d = rule_.grade == flow_grade::concurrency
                         ? check_in_flight(key, threshold, tokens)
                     : rule_.behavior == control_behavior::throttling
                         ? check_spacing(ctx, key, clamp_tokens(threshold))
                         : check_tokens(ctx, key, clamp_tokens(threshold));
  switch (d.outcome) {
    case slot_verdict::kind::pass:
      break;
    case slot_verdict::kind::wait:
      return slot_verdict::wait(d.value);
    case slot_verdict::kind::block: {
      block_info b;
      b.reason = block_reason::param_flow;
      b.rule_index = index_;
      b.retry_after = std::chrono::milliseconds(d.value);
      b.subject = value;  // the caller's value: valid as long as its arguments are
      return slot_verdict::blocked(b);
    }
  }
  return slot_verdict::pass();
}

std::int64_t param_rule::bucket_time(std::int64_t now_ms) const noexcept {
  std::int64_t epoch = state_->epoch_ms.load(std::memory_order_relaxed);
  if (epoch == no_epoch) {
    std::int64_t unset = no_epoch;
    epoch = state_->epoch_ms.compare_exchange_strong(unset, now_ms, std::memory_order_relaxed)
                ? now_ms
                : unset;
  }
  return std::clamp<std::int64_t>(now_ms - epoch, 0, time_max);
}

// Sentinel's passDefaultLocalCheck: a bucket of count + burstCount tokens per value, refilled by
// elapsed × count / duration only once a whole duration has passed since the last refill.
param_rule::decision param_rule::check_tokens(const check_context& ctx, const value_key& key,
                                              std::int64_t token_count) const noexcept {
  if (token_count == 0) return refuse(0);
  const std::int64_t max_count =
      std::min<std::int64_t>(token_count + rule_.burst_count, token_mask);
  const auto acquire = static_cast<std::int64_t>(ctx.acquire);
  if (acquire > max_count) return refuse(0);

  const std::int64_t now = bucket_time(ctx.now_ms);
  bool inserted = false;
  const auto slot = state_->table.find_or_insert(key, pack(now, max_count - acquire), inserted);
  if (!slot || inserted) return pass();  // a first request always passes

  std::uint64_t word = slot.state->load(std::memory_order_relaxed);
  while (true) {
    const std::int64_t rest = tokens_of(word);
    const std::int64_t pass_ms = now - time_of(word);  // negative if another thread is ahead
    std::uint64_t next = 0;
    if (pass_ms > duration_ms_) {
      // Both factors fit in 64 bits together: pass_ms < 2^38, token_count < 2^26.
      const auto to_add = static_cast<std::int64_t>(static_cast<std::uint64_t>(pass_ms) *
                                                    static_cast<std::uint64_t>(token_count) /
                                                    static_cast<std::uint64_t>(duration_ms_));
      const std::int64_t fresh =
          to_add + rest > max_count ? max_count - acquire : rest + to_add - acquire;
      if (fresh < 0) return refuse(duration_ms_);
      next = pack(now, fresh);
    } else {
      if (rest < acquire) return refuse(duration_ms_ - std::max<std::int64_t>(pass_ms, 0) + 1);
      next = word - static_cast<std::uint64_t>(acquire);
    }
    if (slot.state->compare_exchange_weak(word, next, std::memory_order_relaxed)) {
      return pass();
    }
  }
}

// Sentinel's passThrottleLocalCheck: passes per value spaced costTime apart; a pass due within
// maxQueueingTimeMs waits for its turn (returned as a wait, never slept here).
param_rule::decision param_rule::check_spacing(const check_context& ctx, const value_key& key,
                                               std::int64_t token_count) const noexcept {
  if (token_count == 0) return refuse(0);
  const auto cost_ns =
      std::llround(1e9 * ctx.acquire * rule_.duration_in_sec / static_cast<double>(token_count));
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
param_rule::decision param_rule::check_in_flight(const value_key& key, double threshold,
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
