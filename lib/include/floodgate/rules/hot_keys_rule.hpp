// Hot-key rules: observe the most requested values of a parameter (SPEC §3 `hotKeys`, §11).
#pragma once

#include <floodgate/chain/param_value.hpp>
#include <floodgate/rules/rule_error.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace floodgate {

/// The largest `top` a hotKeys rule may ask for (bounds the memory of its summary).
inline constexpr std::int32_t max_hot_keys_top = 1000;
/// The longest `windowSec` a hotKeys rule may ask for: one day.
inline constexpr std::int32_t max_hot_keys_window_sec = 86400;

/** One hot-key rule: keeps the approximate `top` values of a parameter by request count over
    the last `window_sec` seconds; a value counted more than `threshold` times in the window is
    hot. It limits nothing. Exactly one of `param` (HTTP) and `param_idx` (library argument list;
    negative counts from the end) is set, as for paramFlow rules. */
struct hot_keys_rule {
  std::string name;
  std::string resource;
  std::optional<param_selector> param;
  std::optional<std::int32_t> param_idx;
  std::int32_t window_sec = 5;
  std::int32_t top = 20;
  double threshold = 100;  ///< requests in the window above which a value is hot

  friend bool operator==(const hot_keys_rule&, const hot_keys_rule&) = default;
};

/** Checks `rule`, appending every problem found to `errors` with paths prefixed by `path`
    (`hotKeys[0]`). */
void validate(const hot_keys_rule& rule, std::string_view path, std::vector<rule_error>& errors);

}  // namespace floodgate
