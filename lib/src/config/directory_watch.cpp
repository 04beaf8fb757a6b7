#include "config/directory_watch.hpp"

#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace floodgate::config::detail {

namespace {

constexpr std::uint32_t watch_mask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE |
                                     IN_DELETE | IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF |
                                     IN_MOVE_SELF | IN_ONLYDIR;

}  // namespace

directory_watch::directory_watch(const boost::asio::any_io_executor& executor)
    : descriptor_(executor) {
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return;
  boost::system::error_code ec;
  descriptor_.assign(fd, ec);
  if (ec) ::close(fd);
}

directory_watch::~directory_watch() { close(); }

bool directory_watch::usable() {
  std::lock_guard lock(mutex_);
  return descriptor_.is_open();
}

bool directory_watch::watch(const std::vector<target>& targets) {
  std::lock_guard lock(mutex_);
  if (!descriptor_.is_open()) return false;
  const int fd = descriptor_.native_handle();
  std::map<int, watched> next;
  bool all = true;
  for (const target& t : targets) {
    // The same directory (inode) twice yields the same wd; the names merge.
    const int wd = ::inotify_add_watch(fd, t.directory.c_str(), watch_mask);
    if (wd >= 0) {
      next[wd].directory = t.directory;
      next[wd].names.insert(t.name);
    } else if (errno == ENOENT) {
      all = false;  // missing now (not refused: EACCES or the watch limit would stay so)
    }
  }
  for (const auto& [wd, w] : watches_) {
    if (!next.contains(wd)) ::inotify_rm_watch(fd, wd);
  }
  watches_ = std::move(next);
  return all;
}

bool directory_watch::writing() {
  std::lock_guard lock(mutex_);
  return writing_;
}

bool directory_watch::completes_write(std::uint32_t mask, int wd, std::string_view name) {
  if ((mask & IN_MODIFY) != 0 && (mask & IN_CLOSE_WRITE) == 0) {
    writing_ = true;
    return false;
  }
  if ((mask & IN_CREATE) != 0 && (mask & IN_ISDIR) == 0 && !name.empty()) {
    // A regular file is written next and closed (reported then); a symlink is complete.
    const auto w = watches_.find(wd);
    struct stat st {};
    if (w != watches_.end() &&
        ::lstat((w->second.directory + "/" + std::string(name)).c_str(), &st) == 0 &&
        S_ISREG(st.st_mode)) {
      writing_ = true;
      return false;
    }
  }
  writing_ = false;  // closed, replaced, removed, or unknown (overflow): not a write under way
  return true;
}

void directory_watch::clear_writing() {
  std::lock_guard lock(mutex_);
  writing_ = false;
}

void directory_watch::start(std::function<void()> on_change, std::function<void()> on_write) {
  std::lock_guard lock(mutex_);
  on_change_ = std::move(on_change);
  on_write_ = std::move(on_write);
  if (descriptor_.is_open()) read();
}

void directory_watch::close() {
  std::lock_guard lock(mutex_);
  on_change_ = nullptr;
  on_write_ = nullptr;
  boost::system::error_code ignored;
  descriptor_.close(ignored);
  watches_.clear();
}

bool directory_watch::relevant(int wd, std::uint32_t mask, std::string_view name) const {
  if ((mask & (IN_Q_OVERFLOW | IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) != 0) return true;
  if (name.empty() || name.starts_with("..")) return true;
  const auto it = watches_.find(wd);
  return it != watches_.end() && it->second.names.contains(std::string(name));
}

void directory_watch::read() {
  descriptor_.async_read_some(
      boost::asio::buffer(buffer_),
      // The callback copy keeps the owner (and so this object) alive until the handler ran.
      [this, callback = on_change_, on_write = on_write_](boost::system::error_code ec,
                                                          std::size_t n) {
        if (ec) return;  // closed (operation_aborted) or broken: polling still runs
        bool changed = false;
        bool written = false;
        std::unique_lock lock(mutex_);
        for (std::size_t at = 0; at + sizeof(inotify_event) <= n;) {
          inotify_event event;
          std::memcpy(&event, buffer_.data() + at, sizeof event);
          const char* name = buffer_.data() + at + sizeof event;
          const std::string_view name_view(name, ::strnlen(name, event.len));
          if (relevant(event.wd, event.mask, name_view)) {
            if (completes_write(event.mask, event.wd, name_view)) {
              changed = true;
            } else {
              written = true;
            }
          }
          if ((event.mask & IN_IGNORED) != 0) watches_.erase(event.wd);
          at += sizeof event + event.len;
        }
        if (descriptor_.is_open()) read();
        const bool open = descriptor_.is_open();
        const bool still_writing = writing_;
        lock.unlock();
        if (!open) return;
        if (changed && callback) callback();
        // A write under way at the end of the batch (maybe after another one's close).
        if (written && still_writing && on_write) on_write();
      });
}

}  // namespace floodgate::config::detail
