// One compiled hot-parameter rule: its thresholds and its bounded per-value state.
#pragma once

#include "param/hot_key_tracker.hpp"
#include "param/parameter_of.hpp"
#include "param/value_key.hpp"
#include "param/value_table.hpp"

#include <floodgate/chain/slot.hpp>
#include <floodgate/rules/param_flow_rule.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

namespace floodgate::param_detail {

/// Sentinel's bound on the values one rule tracks: min(4000 × durationInSec, 200000).
std::size_t value_capacity(const param_flow_rule& rule) noexcept;

/** The state of a rule that survives reloads while the rule is unchanged: the per-value table and
    the hasher its keys were made with. */
struct rule_state {
  rule_state(const param_flow_rule& rule, bool track_values);
  value_hasher hasher;
  value_table table;
  /// The rule's values by request count (no limit; hot = above `count` per durationInSec);
  /// null when the engine does not track paramFlow values.
  std::unique_ptr<hot_key_tracker> tracker;
};

/** One rule as checked on the request path. Built on the control plane; the checks are
    noexcept, lock-free (see value_table) and never allocate. The QPS reject check is inline:
    it is the common rule, and the slot runs it for every entry.

    QPS grade, reject: Sentinel's passDefaultLocalCheck token bucket per value. QPS grade,
    throttling: passThrottleLocalCheck spacing per value, with the wait returned instead of
    slept. Concurrency grade: in-flight entries per value, counted at check and released when the
    entry exits or a later slot blocks it. */
class param_rule {
 public:
  param_rule(const param_flow_rule& rule, std::int32_t index, std::shared_ptr<rule_state> state);

  const param_flow_rule& rule() const noexcept { return rule_; }
  const std::shared_ptr<rule_state>& state() const noexcept { return state_; }
  /// The rule's position in the paramFlow section.
  std::int32_t index() const noexcept { return index_; }

  /// What the check of one value decided, in two registers: pass, wait (`value` ns) or block
  /// (`value` = retry-after ms).
  struct decision {
    slot_verdict::kind outcome;
    std::int64_t value;
  };

  /// The entry's value of this rule's parameter, or null when it has none (the rule passes).
  const param_value* value_of(const check_context& ctx, value_room& room) const noexcept {
    return parameter_of(ctx, rule_.param, rule_.param_idx, room);
  }
  /// Checks `value`, the entry's value of this rule's parameter.
  decision check(const check_context& ctx, const param_value& value,
                 entry_tokens& tokens) const noexcept;
  /// The verdict for a block of `value` that check() decided.
  slot_verdict blocked(const param_value& value, std::int64_t retry_after_ms) const noexcept;

 private:
  // `tokens` is the QPS reject check of a rule without per-value items.
  enum class algorithm : std::uint8_t { tokens, tokens_with_items, spacing, in_flight };
  struct item {
    value_key key;
    double count;
  };

  static constexpr decision pass() noexcept { return {slot_verdict::kind::pass, 0}; }
  static constexpr decision refuse(std::int64_t retry_after_ms) noexcept {
    return {slot_verdict::kind::block, retry_after_ms};
  }

  // A token bucket is one atomic word: stamp | tokens left, where the stamp is the time of the
  // last refill, now_ms modulo 2^38 (8.7 years) shifted above the tokens, so it never runs out.
  // 26 bits of tokens allow 67 million per value per duration (larger counts are clamped).
  static constexpr int token_bits = 26;
  static constexpr std::uint64_t token_mask = (std::uint64_t{1} << token_bits) - 1;
  // Elapsed times are read modulo 2^38 too. The last 2^36 ms (2.2 years) of that range are
  // negative: another thread stamped the bucket after this one read the clock.
  static constexpr std::uint64_t behind_from_ms =
      (std::uint64_t{1} << 38) - (std::uint64_t{1} << 36);
  static constexpr std::uint64_t stamp(std::int64_t now_ms) noexcept {
    return static_cast<std::uint64_t>(now_ms) << token_bits;
  }
  /// Milliseconds from `word`'s stamp to `now` (a stamp), modulo 2^38.
  static constexpr std::uint64_t elapsed_ms(std::uint64_t now, std::uint64_t word) noexcept {
    return (now - (word & ~token_mask)) >> token_bits;
  }
  static std::int64_t clamp_tokens(double count) noexcept;
  /// count + burstCount tokens, clamped to what a bucket word holds.
  std::int64_t bucket_size(std::int64_t token_count) const noexcept {
    return std::min<std::int64_t>(token_count + rule_.burst_count,
                                  static_cast<std::int64_t>(token_mask));
  }

  double threshold_of(value_key key) const noexcept;
  decision check_tokens(const check_context& ctx, value_key key, std::int64_t token_count,
                        std::int64_t max_count) const noexcept;
  decision check_spacing(const check_context& ctx, value_key key,
                         std::int64_t token_count) const noexcept;
  decision check_in_flight(value_key key, double threshold, entry_tokens& tokens) const noexcept;

  param_flow_rule rule_;
  std::int32_t index_;
  algorithm algorithm_;
  std::shared_ptr<rule_state> state_;
  std::vector<item> items_;  // sorted by key
  std::int64_t tokens_;      // rule_.count as whole tokens
  std::int64_t max_tokens_;  // bucket_size(tokens_)
  std::int64_t duration_ms_;
};

inline param_rule::decision param_rule::check(const check_context& ctx, const param_value& value,
                                              entry_tokens& tokens) const noexcept {
  char buffer[integer_text_size];
  const std::string_view text = value_text(value, buffer);
  const value_key key = state_->hasher(text);
  if (state_->tracker != nullptr) state_->tracker->record(key, text, ctx.now_ms);
  if (algorithm_ == algorithm::tokens) [[likely]] {
    return check_tokens(ctx, key, tokens_, max_tokens_);
  }
  switch (algorithm_) {
    case algorithm::tokens:
    case algorithm::tokens_with_items: {
      const std::int64_t token_count = clamp_tokens(threshold_of(key));
      return check_tokens(ctx, key, token_count, bucket_size(token_count));
    }
    case algorithm::spacing:
      return check_spacing(ctx, key, clamp_tokens(threshold_of(key)));
    case algorithm::in_flight:
      break;
  }
  return check_in_flight(key, threshold_of(key), tokens);
}

// Sentinel's passDefaultLocalCheck: a bucket of count + burstCount tokens per value, refilled by
// elapsed × count / duration only once a whole duration has passed since the last refill.
inline param_rule::decision param_rule::check_tokens(const check_context& ctx, value_key key,
                                                     std::int64_t token_count,
                                                     std::int64_t max_count) const noexcept {
  if (token_count == 0) return refuse(0);
  const auto acquire = static_cast<std::int64_t>(ctx.acquire);
  if (acquire > max_count) return refuse(0);

  const std::uint64_t now = stamp(ctx.now_ms);
  value_table::slot slot = state_->table.find(key);
  if (!slot) [[unlikely]] {
    bool inserted = false;
    slot = state_->table.find_or_insert(key, now | static_cast<std::uint64_t>(max_count - acquire),
                                        inserted);
    if (!slot || inserted) return pass();  // a first request always passes
  }

  std::uint64_t word = slot.state->load(std::memory_order_relaxed);
  while (true) {
    const auto rest = static_cast<std::int64_t>(word & token_mask);
    const std::uint64_t pass_ms = elapsed_ms(now, word);
    const auto duration = static_cast<std::uint64_t>(duration_ms_);
    std::uint64_t next = 0;
    if (pass_ms > duration && pass_ms < behind_from_ms) {
      // Both factors fit in 64 bits together: pass_ms < 2^38, token_count < 2^26.
      const auto to_add =
          static_cast<std::int64_t>(pass_ms * static_cast<std::uint64_t>(token_count) / duration);
      const std::int64_t fresh =
          to_add + rest > max_count ? max_count - acquire : rest + to_add - acquire;
      if (fresh < 0) return refuse(duration_ms_);
      next = now | static_cast<std::uint64_t>(fresh);
    } else {
      if (rest < acquire) {
        const auto since = static_cast<std::int64_t>(pass_ms < behind_from_ms ? pass_ms : 0);
        return refuse(duration_ms_ - since + 1);
      }
      next = word - static_cast<std::uint64_t>(acquire);
    }
    if (slot.state->compare_exchange_weak(word, next, std::memory_order_relaxed)) {
      return pass();
    }
  }
}

}  // namespace floodgate::param_detail
