// Hot reload of a rule file: inotify on the directory, debounce, poll safety net.
#pragma once

#include <floodgate/config/rule_file.hpp>
#include <floodgate/core/engine.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace floodgate::config {

/// The result of the last load attempt, for the admin API and metrics.
struct reload_status {
  std::string file;
  std::int64_t time_unix_ms = 0;  ///< wall-clock time of the attempt
  bool ok = false;
  std::string error;               ///< all errors, one per line; empty when ok
  std::uint64_t successes = 0;     ///< every successful attempt, the initial load included
  std::uint64_t failures = 0;
};

struct watcher_options {
  std::chrono::milliseconds debounce{150};
  std::chrono::milliseconds poll_interval{2000};  ///< content-hash safety net
};

/** Loads a rule file into an engine and keeps it in force as the file changes.

    Watches the file's directory (editors' rename-on-save, ConfigMap `..data` symlink swaps,
    in-place writes, touch), debounces, re-reads, validates and publishes the complete rule set
    atomically. A missing or rejected file keeps the last good rules. Runs on the given executor;
    no thread of its own.

    @par Thread Safety
    status() from any thread.
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
  /// Stops watching; safe to call twice.
  void stop();

  reload_status status() const;

 private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

}  // namespace floodgate::config
