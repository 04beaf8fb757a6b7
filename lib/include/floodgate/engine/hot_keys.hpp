// What the engine reports about hot keys: the top values of tracked parameters, and transitions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace floodgate {

/** One tracked value of a resource's parameter, as `/floodgate/hotkeys` shows it. `count` is
    the approximate number of requests with this value in the rule's window (never below the
    truth for values in the summary; see the README's hot keys section for the error bound). */
struct hot_key {
  std::string rule;   ///< the rule's name, else `hotKeys[i]` or `paramFlow[i]`
  std::string param;  ///< `header:X-User`, `query:id`, `client_ip`, `origin` or `arg[0]`
  std::string value;  ///< the value (its first 47 bytes)
  std::uint64_t count = 0;
  bool hot = false;  ///< count > the rule's threshold (a paramFlow rule's: its count)
  friend bool operator==(const hot_key&, const hot_key&) = default;
};

/// A value that became hot (`hot`) or cold (`!hot`), seen by a refresh of the hot keys.
struct hot_key_event {
  std::string resource;
  std::string rule;
  std::string param;
  std::string value;
  std::uint64_t count = 0;  ///< the value's count in the window at the refresh
  bool hot = false;
};

/** Told of every hot/cold transition. Runs on a control-plane thread, never a request thread:
    the engine's hot-key ticker, or whichever thread calls engine::refresh_hot_keys() (directly,
    or through engine::hot_keys() and engine::hot_key_stats(), as the admin API and a metrics
    scrape do). Calls are serialized. It must not call those engine functions itself. */
using hot_key_observer = std::function<void(const hot_key_event&)>;

/// One tracked parameter's state at the last refresh, for metrics (no values: cardinality).
struct hot_key_rule_stats {
  std::string resource;
  std::string rule;
  std::size_t hot_values = 0;   ///< values above the threshold in the window
  std::uint64_t top_count = 0;  ///< the highest count in the window
  /// Cold -> hot transitions seen by refreshes since the rule loaded, and those a changed rule
  /// carried over from the one it replaced under the same label (its name, else its place).
  std::uint64_t events = 0;
  std::uint64_t carried_events = 0;  ///< of `events`, those carried over
  /// Identity of the rule's state, which changes when the rule does: a number never the same for
  /// a new state as for an old one (unlike an address, which the new one may reuse).
  std::uint64_t tracker_serial = 0;
};

}  // namespace floodgate
