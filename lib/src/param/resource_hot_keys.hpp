// The hotKeys rules of one resource: each counts its parameter's values, limits nothing.
#pragma once

#include "param/hot_key_tracker.hpp"
#include "rules/indexed_rule.hpp"

#include <floodgate/chain/slot.hpp>
#include <floodgate/rules/hot_keys_rule.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace floodgate {

/** The hotKeys rules of one resource with their trackers. A tracker of a rule equal to one in
    `previous` carries over (its counts and hot set); a new or changed rule starts empty.

    @par Thread Safety
    record() and is_hot() are lock-free and never allocate; any number of threads.
*/
class resource_hot_keys {
 public:
  static std::unique_ptr<resource_hot_keys> build(std::vector<indexed_rule<hot_keys_rule>> rules,
                                                  const resource_hot_keys* previous);

  /// Counts the entry's value of each rule's parameter (an entry without it is not counted).
  void record(const check_context& ctx) const noexcept;
  /// Whether any rule's tracker finds `value` hot at `now_ms`.
  bool is_hot(const param_value& value, std::int64_t now_ms) const noexcept;
  /// Calls `f(rule, index, tracker)` for every rule (control plane).
  void for_each_tracker(const std::function<void(const hot_keys_rule&, std::int32_t,
                                                 const param_detail::hot_key_tracker&)>& f) const;

 private:
  struct tracked {
    hot_keys_rule rule;
    std::int32_t index;
    std::shared_ptr<param_detail::hot_key_tracker> tracker;
  };
  std::vector<tracked> rules_;
};

}  // namespace floodgate
