// One parameter's hot values: the windowed top-N summary, the threshold and the hot set.
#pragma once

#include "param/top_value_window.hpp"
#include "param/value_key.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace floodgate::param_detail {

/** Slots per bucket of a summary reporting `top` values: 16 per reported value, at least 512.
    Frequent values stay exact while the tail churns in the other slots (see top_value_window). */
std::size_t summary_slots(std::int32_t top) noexcept;

/** Tracks the values of one parameter (of a hotKeys rule, or of a paramFlow rule): counts them
    on the request path and, on refresh, works out which are hot (more than `threshold` requests
    in the window, judged on the count a value certainly had: a flood of distinct values, each
    inheriting the count of the one it replaced, makes none of them hot) and which became hot or
    cold since the last refresh.

    @par Thread Safety
    record(), count() and is_hot() are lock-free and never allocate (top_value_window). refresh()
    and the accessors of its results take the tracker's mutex, which the request path never
    takes (control plane).
*/
class hot_key_tracker {
 public:
  /// A value that became hot (`hot`) or cold at a refresh.
  struct transition {
    std::string value;
    std::uint64_t count;
    bool hot;
  };
  /// What the last refresh found.
  struct view {
    std::vector<top_value_window::counted> top;  ///< at most `top` values, highest first
    std::size_t hot_values = 0;                  ///< values above the threshold
    std::uint64_t top_count = 0;                 ///< the highest count (0 when empty)
    std::uint64_t events = 0;                    ///< cold -> hot transitions so far
  };

  hot_key_tracker(const value_hasher& hasher, std::int64_t window_ms, std::int32_t top,
                  double threshold);

  const value_hasher& hasher() const noexcept { return hasher_; }
  void record(const value_key& key, std::string_view text, std::int64_t now_ms) noexcept {
    window_.record(key, text, now_ms);
  }
  /// Whether `text` certainly had more requests than the threshold in the window ending at
  /// `now_ms` (its count less what it inherited from the value it replaced).
  bool is_hot(std::string_view text, std::int64_t now_ms) const noexcept {
    return above_threshold(window_.guaranteed_count(hasher_(text), now_ms));
  }
  /// Whether a value that certainly had `guaranteed` requests in the window is hot.
  bool above_threshold(std::uint64_t guaranteed) const noexcept {
    return static_cast<double>(guaranteed) > threshold_;
  }
  const top_value_window& window() const noexcept { return window_; }
  std::int32_t top() const noexcept { return top_; }
  double threshold() const noexcept { return threshold_; }

  /// Recomputes the view at `now_ms`, appending the values that changed side to `changed`.
  void refresh(std::int64_t now_ms, std::vector<transition>& changed) const;
  /// The view of the last refresh.
  view last() const;
  /** Adds `earlier`'s cold -> hot transitions to this tracker's: a changed rule's new tracker
      goes on counting where the one it replaces under the same label stopped. */
  void carry_events(const hot_key_tracker& earlier);
  /// Cold -> hot transitions so far, those carried over included.
  std::uint64_t events() const;
  /// Of events(), those carried over.
  std::uint64_t carried_events() const;
  /// A number no other tracker of the process had (a new one may take an old one's address).
  std::uint64_t serial() const noexcept { return serial_; }

 private:
  value_hasher hasher_;
  top_value_window window_;
  std::int32_t top_;
  double threshold_;
  std::uint64_t serial_;
  mutable std::mutex mutex_;  // guards the members below
  std::uint64_t carried_ = 0;
  struct key_hash {
    std::size_t operator()(const value_key& k) const noexcept { return k.lo; }
  };
  mutable std::unordered_map<value_key, std::string, key_hash> hot_;  // value key -> text
  mutable view last_;
};

}  // namespace floodgate::param_detail
