#include "param/hot_key_tracker.hpp"

#include "chain/serial_number.hpp"

#include <algorithm>

namespace floodgate::param_detail {

std::size_t summary_slots(std::int32_t top) noexcept {
  return std::max<std::size_t>(512, 16 * static_cast<std::size_t>(std::max(top, 1)));
}

hot_key_tracker::hot_key_tracker(const value_hasher& hasher, std::int64_t window_ms,
                                 std::int32_t top, double threshold)
    : hasher_(hasher),
      window_(window_ms, summary_slots(top)),
      top_(std::max(top, 1)),
      threshold_(threshold),
      serial_(floodgate::detail::next_serial_number()) {}

void hot_key_tracker::refresh(std::int64_t now_ms, std::vector<transition>& changed) const {
  std::vector<top_value_window::counted> values = window_.values(now_ms);
  const std::lock_guard lock(mutex_);
  std::unordered_map<value_key, std::string, key_hash> hot;
  for (auto& v : values) {
    if (!above_threshold(v.count)) break;  // sorted by count, which bounds what each certainly had
    if (!above_threshold(v.guaranteed())) continue;
    if (!hot_.contains(v.key)) {
      changed.push_back({v.text, v.count, true});
      ++last_.events;
    }
    hot.emplace(v.key, v.text);
  }
  for (const auto& [key, text] : hot_) {
    if (!hot.contains(key)) changed.push_back({text, window_.count(key, now_ms), false});
  }
  hot_ = std::move(hot);
  last_.hot_values = hot_.size();
  last_.top_count = values.empty() ? 0 : values.front().count;
  values.resize(std::min(values.size(), static_cast<std::size_t>(top_)));
  last_.top = std::move(values);
}

hot_key_tracker::view hot_key_tracker::last() const {
  const std::lock_guard lock(mutex_);
  return last_;
}

void hot_key_tracker::carry_events(const hot_key_tracker& earlier) {
  const std::uint64_t events = earlier.events();
  const std::lock_guard lock(mutex_);
  last_.events += events;
  carried_ += events;
}

std::uint64_t hot_key_tracker::events() const {
  const std::lock_guard lock(mutex_);
  return last_.events;
}

std::uint64_t hot_key_tracker::carried_events() const {
  const std::lock_guard lock(mutex_);
  return carried_;
}

}  // namespace floodgate::param_detail
