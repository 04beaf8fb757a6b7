// Hot reload of a rule file: inotify on the directory, debounce, poll safety net.
#pragma once

#include <floodgate/chain/timer_queue.hpp>
#include <floodgate/config/rule_file.hpp>
#include <floodgate/engine/engine.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace floodgate::config {

/// The result of the last load attempt, for the admin API and metrics.
struct reload_status {
  std::string file;
  std::int64_t time_unix_ms = 0;  ///< wall-clock time of the attempt
  bool ok = false;
  std::string error;            ///< all errors, one per line; empty when ok
  std::uint64_t successes = 0;  ///< every successful attempt, the initial load included
  std::uint64_t failures = 0;
};

/// Timing of a @ref rule_file_watcher.
struct watcher_options {
  /// Quiet time after the last file event before reloading (a burst of editor events is one
  /// reload). A steady stream of completed writes (closes, renames) still reloads within
  /// 4 × debounce of the first one; writes under way (modified, not closed) are not events.
  std::chrono::milliseconds debounce{150};
  std::chrono::milliseconds poll_interval{2000};  ///< content-hash safety net
  /// The debounce and poll timers; must outlive the watcher. Null: Asio steady timers on the
  /// watcher's executor. Tests pass a manual_timer_queue.
  timer_queue* timers = nullptr;
  /** Called after each attempt made once the first start() has returned (a change, the poll,
      reload_now()) with the status it recorded; that start() returns its result instead. For
      logs: the demo prints every outcome on stderr. Runs on the watcher's executor (or
      reload_now()'s caller), one call at a time; must not throw, nor call start(), stop() or
      reload_now(). */
  std::function<void(const reload_status&)> on_attempt;
};

/** Loads a rule file into an engine and keeps it in force as the file changes.

    Watches the file's directory (editors' rename-on-save, ConfigMap `..data` symlink swaps,
    in-place writes, touch), debounces, re-reads, validates and publishes the complete rule set
    atomically. An in-place write is read when its writer closes the file, or once it has been
    quiet for 800 ms without closing it; never while it writes (a prefix can be a valid file).
    While a watched directory is missing, the poll runs every 200 ms. A missing or rejected file keeps the last good rules. Runs on the given executor
    (through a strand); no thread of its own. Reading and parsing happen on that executor, so a
    reload holds an I/O thread while it parses the file (at most 8 MiB and 400 000 values).

    An attempt is counted (and the status updated) when the file's content, or the reason it
    cannot be read, differs from the previous attempt's: a `touch`, a poll of an unchanged file
    or a second event for the same write is not an attempt.

    @par Thread Safety
    start(), stop(), reload_now() and status() may be called from any thread. The engine and the
    executor must outlive the watcher.
*/
class rule_file_watcher {
 public:
  rule_file_watcher(boost::asio::any_io_executor executor, engine& eng, std::string path,
                    watcher_options options = {});
  ~rule_file_watcher();

  /** Loads the file now (synchronously) and starts watching. Returns the errors of the initial
      load; on errors the engine's rules are unchanged and the caller should exit (the demo exits
      with code 2 and prints them). */
  parse_result start();
  /// Stops watching; safe to call twice, from any thread.
  void stop();

  /** Loads the file now, synchronously, even if its content did not change (an admin "reload"
      action). Counted like any attempt; on errors the rules in force stay. */
  parse_result reload_now();

  reload_status status() const;

 private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

}  // namespace floodgate::config
