// inotify on directories, read through Asio: tells its owner that a watched name may have changed.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <array>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace floodgate::config::detail {

/** Watches directories (never the files: editors' rename-on-save and ConfigMap symlink swaps
    replace the file's inode) and calls `on_change` for each batch of events touching a watched
    name, a name starting with `..` (Kubernetes' `..data` swap), the directory itself, or an
    event-queue overflow — except the events of a write in progress: a modification, or the
    creation of a regular file, reports nothing until the writer closes the file (see writing()).
    Spurious calls are fine: the owner compares content.

    No thread of its own: events are read with an Asio stream_descriptor on the given executor.

    @par Thread Safety
    Safe to call from any thread; `on_change` is called without the internal lock held.
*/
class directory_watch {
 public:
  /// One directory to watch and the entry name in it that matters.
  struct target {
    std::string directory;
    std::string name;
  };

  explicit directory_watch(const boost::asio::any_io_executor& executor);
  ~directory_watch();
  directory_watch(const directory_watch&) = delete;
  directory_watch& operator=(const directory_watch&) = delete;

  /// False when inotify is unavailable (then only polling sees changes).
  bool usable();

  /** Makes the watch set exactly `targets` (re-adding watches lost when a directory was
      replaced). Directories that cannot be watched now are retried on the next call. Returns
      false when a target's directory does not exist (deleted, not yet created again). */
  bool watch(const std::vector<target>& targets);

  /** True while a watched name is being written in place: it was modified (or created as a
      regular file) and not closed since. Such a file may be a valid prefix of what its writer
      is writing, so the owner waits for the close (IN_CLOSE_WRITE), which reports a change. */
  bool writing();

  /** Starts reading events; `on_change` runs on the executor, and `on_write` when a batch of
      events holds only a write under way (see writing()). Call once. */
  void start(std::function<void()> on_change, std::function<void()> on_write = nullptr);

  /// Forgets a write under way (its writer went quiet without closing: the owner reads it).
  void clear_writing();

  /// Stops reading and releases the inotify descriptor; safe to call twice.
  void close();

 private:
  void read();  // with mutex_ held
  bool relevant(int wd, std::uint32_t mask, std::string_view name) const;
  /// Whether a relevant event ends a write (and so reports a change) or starts one.
  bool completes_write(std::uint32_t mask, int wd, std::string_view name);

  std::mutex mutex_;  // guards everything below against the read handler
  boost::asio::posix::stream_descriptor descriptor_;
  std::function<void()> on_change_;
  std::function<void()> on_write_;
  /// One inotify watch: its directory (for lstat) and the names that matter in it.
  struct watched {
    std::string directory;
    std::set<std::string> names;
  };
  std::map<int, watched> watches_;  // by watch descriptor
  bool writing_ = false;
  alignas(8) std::array<char, 16 * 1024> buffer_{};
};

}  // namespace floodgate::config::detail
