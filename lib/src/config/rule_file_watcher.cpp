#include <floodgate/config/rule_file_watcher.hpp>

#include "config/directory_watch.hpp"
#include "config/file_text.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <algorithm>
#include <atomic>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <utility>

namespace floodgate::config {

namespace asio = boost::asio;

namespace {

/** One of the watcher's timers: an Asio steady timer on the watcher's strand, or a callback in
    an injected timer_queue. Starting it again, or cancelling it, drops the pending callback. */
class watcher_timer {
 public:
  watcher_timer(const asio::strand<asio::any_io_executor>& strand, timer_queue* queue)
      : asio_(strand), queue_(queue) {}

  /// Calls `fire` after `delay` unless restarted or cancelled first.
  void start(std::chrono::nanoseconds delay, std::function<void()> fire) {
    cancel();
    if (queue_ != nullptr) {
      handle_ = queue_->schedule(delay, std::move(fire));
      return;
    }
    asio_.expires_after(delay);
    // A completion already queued when the timer is restarted runs with success: the
    // generation tells it apart (the owner's `fire` keeps this object alive).
    const std::uint64_t generation = generation_.fetch_add(1) + 1;
    asio_.async_wait([this, generation, fire = std::move(fire)](boost::system::error_code ec) {
      if (!ec && generation == generation_.load()) fire();  // not restarted or stopped
    });
  }

  void cancel() {
    if (queue_ == nullptr) {
      generation_.fetch_add(1);
      asio_.cancel();
    } else if (handle_ != 0) {
      queue_->cancel(std::exchange(handle_, 0));
    }
  }

 private:
  asio::steady_timer asio_;
  timer_queue* queue_;
  timer_queue::handle handle_ = 0;
  std::atomic<std::uint64_t> generation_{0};
};

}  // namespace

struct rule_file_watcher::impl : std::enable_shared_from_this<impl> {
  impl(const asio::any_io_executor& executor, engine& eng, std::string file, watcher_options opts)
      : strand(asio::make_strand(executor)),
        target(eng),
        path(std::move(file)),
        options(std::move(opts)),
        watch(strand),
        debounce(strand, options.timers),
        poll(strand, options.timers),
        settle(strand, options.timers) {
    status.file = path;
  }

  /// Loads the file unless its content (or read error) is the previous attempt's. Needs `work`.
  std::optional<parse_result> attempt(bool force) {
    update_watches();
    if (!watching_all && !polling_fast && started && !stopped) {
      arm_poll();  // a directory went missing: look for it again soon
    }
    if (!force && watch.writing()) {
      // Written in place and not closed yet: what is there may be a valid prefix. The close
      // reports a change; a writer that goes quiet without closing is read by on_write's timer.
      return std::nullopt;
    }
    detail::file_text file = detail::read_file_text(path);
    // Errors and contents hash apart: an unreadable file and one containing the message differ.
    const std::size_t fingerprint =
        file.ok() ? std::hash<std::string>{}(file.text) : ~std::hash<std::string>{}(file.error);
    if (!force && last_fingerprint == fingerprint) return std::nullopt;
    last_fingerprint = fingerprint;

    parse_result result;
    if (file.ok()) {
      result = parse_rules(file.text, path);
    } else {
      result.errors.push_back({path, 1, 1, {}, std::move(file.error)});
    }
    if (result.ok()) {
      const load_result loaded = target.load_rules(*result.rules);
      if (!loaded) {
        result.rules.reset();
        for (const rule_error& e : loaded.errors) {
          result.errors.push_back({path, 1, 1, e.path, e.message});
        }
      }
    }
    const reload_status recorded = record(result);
    if (started && options.on_attempt) options.on_attempt(recorded);
    return result;
  }

  reload_status record(const parse_result& result) {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    std::lock_guard lock(status_mutex);
    status.time_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now).count();
    status.ok = result.ok();
    status.error = result.ok() ? std::string() : result.error_text();
    ++(result.ok() ? status.successes : status.failures);
    return status;
  }

  /** Watches the directory of the path as given (rename-on-save, `..data` swaps), when the
      path is a symlink the directory of its current target (in-place edits there), and the
      directory holding each symlink met resolving the path (a link swapped anywhere on it). */
  void update_watches() {
    namespace fs = std::filesystem;
    const fs::path given(path);
    auto target_of = [](const fs::path& p) {
      const fs::path dir = p.parent_path();
      return detail::directory_watch::target{dir.empty() ? "." : dir.string(),
                                             p.filename().string()};
    };
    std::vector<detail::directory_watch::target> targets{target_of(given)};
    // Resolved a component at a time, every link met (in the path as given and in the links'
    // targets alike: `conf/current/rules.yaml` with `current` swapped, or a file linked into a
    // directory reached through another link) is watched in the directory holding it; as the
    // kernel resolves, at most 40 links.
    std::deque<fs::path> rest(given.begin(), given.end());
    fs::path resolved_dir;
    for (int links = 0; !rest.empty() && links < 40;) {
      const fs::path next = resolved_dir / rest.front();
      rest.pop_front();
      std::error_code link_ec;
      if (!fs::is_symlink(next, link_ec)) {
        resolved_dir = next;
        continue;
      }
      ++links;
      targets.push_back(target_of(next));
      const fs::path to = fs::read_symlink(next, link_ec);
      if (link_ec) break;
      if (to.is_absolute()) resolved_dir = to.root_path();
      const fs::path relative = to.relative_path();
      rest.insert(rest.begin(), relative.begin(), relative.end());
    }
    std::error_code ec;
    const fs::path resolved = fs::canonical(given, ec);
    if (!ec) targets.push_back(target_of(resolved));
    // A symlink whose target's directory is gone is a missing directory too (not a target file
    // missing from a directory that exists, nor a loop or a refusal: those stay as they are).
    bool dangling = false;
    if (ec == std::errc::no_such_file_or_directory) {
      std::error_code link_ec;
      fs::path pointed = fs::read_symlink(given, link_ec);
      if (!link_ec) {
        if (pointed.is_relative()) pointed = given.parent_path() / pointed;
        dangling = !fs::exists(pointed.parent_path(), link_ec) && !link_ec;
      }
    }
    watching_all = watch.watch(targets) && !dangling;
  }

  /// A file event: (re)start the debounce, bounded so a stream of events still reloads.
  void on_event() {
    std::lock_guard lock(work);
    if (stopped) return;
    const std::chrono::nanoseconds now = this->now();
    if (!pending) {
      pending = true;
      pending_since = now;
    }
    const auto due = std::min<std::chrono::nanoseconds>(now + options.debounce,
                                                        pending_since + 4 * options.debounce);
    debounce.start(due - now, [self = shared_from_this()] {
      std::lock_guard relock(self->work);
      if (self->stopped) return;
      self->pending = false;
      self->attempt(false);
    });
  }

  /** The poll's next delay: its interval, or a fifth of a second while a directory that inotify
      could watch is missing (deleted, not yet recreated): once it is back, its file is read
      within that, and the change is in force within a second (SPEC §3). */
  std::chrono::nanoseconds poll_delay() {
    if (!watching_all && watch.usable()) {
      return std::min<std::chrono::nanoseconds>(options.poll_interval, rewatch_interval);
    }
    return options.poll_interval;
  }

  /** A write under way (no close yet): read the file once its writer has been quiet for
      settle_delay — a writer that keeps it open (a long-lived descriptor, a hard link made in
      place) is in force within a second of its last write; one that pauses less than that
      mid-file is not read half-written. */
  void on_write() {
    std::lock_guard lock(work);
    if (stopped) return;
    settle.start(settle_delay, [self = shared_from_this()] {
      std::lock_guard relock(self->work);
      if (self->stopped) return;
      self->watch.clear_writing();
      self->attempt(false);
    });
  }

  void arm_poll() {
    const std::chrono::nanoseconds delay = poll_delay();
    polling_fast = delay < options.poll_interval;
    poll.start(delay, [self = shared_from_this()] {
      std::lock_guard lock(self->work);
      if (self->stopped) return;
      self->attempt(false);
      self->arm_poll();
    });
  }

  std::chrono::nanoseconds now() const {
    return options.timers != nullptr ? options.timers->now()
                                     : std::chrono::steady_clock::now().time_since_epoch();
  }

  asio::strand<asio::any_io_executor> strand;
  engine& target;
  const std::string path;
  const watcher_options options;

  std::mutex work;  // serialises attempts, start/stop and every use of the Asio objects below
  detail::directory_watch watch;
  watcher_timer debounce;
  watcher_timer poll;
  watcher_timer settle;  // a write under way gone quiet
  bool started = false;
  bool stopped = false;
  bool pending = false;
  std::chrono::nanoseconds pending_since{0};
  bool watching_all = true;  // every directory of the path is watched
  bool polling_fast = false;  // the poll is armed with rewatch_interval
  static constexpr std::chrono::milliseconds rewatch_interval{200};
  static constexpr std::chrono::milliseconds settle_delay{800};
  std::optional<std::size_t> last_fingerprint;

  mutable std::mutex status_mutex;
  reload_status status;
};

rule_file_watcher::rule_file_watcher(asio::any_io_executor executor, engine& eng, std::string path,
                                     watcher_options options)
    : impl_(std::make_shared<impl>(executor, eng, std::move(path), std::move(options))) {}

rule_file_watcher::~rule_file_watcher() { stop(); }

parse_result rule_file_watcher::start() {
  std::lock_guard lock(impl_->work);
  parse_result result = *impl_->attempt(true);
  if (!impl_->started && !impl_->stopped) {
    impl_->started = true;
    // The callback holds the impl until stop() closes the watch (the cycle is broken there).
    impl_->watch.start([self = impl_] { self->on_event(); }, [self = impl_] { self->on_write(); });
    impl_->arm_poll();
  }
  return result;
}

void rule_file_watcher::stop() {
  std::lock_guard lock(impl_->work);
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->watch.close();
  impl_->debounce.cancel();
  impl_->poll.cancel();
  impl_->settle.cancel();
}

parse_result rule_file_watcher::reload_now() {
  std::lock_guard lock(impl_->work);
  return *impl_->attempt(true);
}

reload_status rule_file_watcher::status() const {
  std::lock_guard lock(impl_->status_mutex);
  return impl_->status;
}

}  // namespace floodgate::config
