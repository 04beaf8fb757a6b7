// Hot reload with the real file system: every way a file gets replaced is seen, bad states never
// replace good rules, and the status tells what happened.
#include <floodgate/chain/timer_queue.hpp>
#include <floodgate/config/rule_file_watcher.hpp>
#include <floodgate/engine/engine.hpp>

#include "lib/config/temp_dir.hpp"

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>

#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace floodgate::config {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

/// A rule file whose single flow rule has the given count: which file is in force is its count.
std::string rules_with_count(int count) {
  return "flow:\n  - resource: r\n    count: " + std::to_string(count) + "\n";
}

/// Inotify only: the poll safety net is pushed out of the way so it cannot hide a missed event.
const watcher_options inotify_only{.debounce = 50ms, .poll_interval = 1h};

class RuleFileWatcher : public ::testing::Test {
 protected:
  /// Runs the io_context until `done` holds; false if it did not within `limit`.
  bool run_until(const std::function<bool()>& done, std::chrono::milliseconds limit = 3000ms) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      io_.run_for(5ms);
      if (io_.stopped()) io_.restart();
    }
    return true;
  }

  /// The count of the flow rule in force, or -1 when there is none.
  double count_in_force() const {
    const rule_set r = eng_.rules();
    return r.flow.size() == 1 ? r.flow[0].count : -1;
  }

  bool count_is(double c) const { return count_in_force() == c; }

  /// Watcher timing on the manual clock: debounce and poll fire only when the test moves time.
  watcher_options manual_timing(std::chrono::milliseconds poll_interval = 1h) {
    return {.debounce = 50ms, .poll_interval = poll_interval, .timers = &timers_};
  }

  /// Replaces the file by a rename (one event) and reads the file events (real inotify) until
  /// the watcher has (re)armed its debounce; false if no event came.
  bool replace_and_see(const std::string& path, int count) {
    const std::uint64_t before = timers_.scheduled();
    dir_.write(".rules.yaml.tmp", rules_with_count(count));
    fs::rename(dir_.file(".rules.yaml.tmp"), path);
    return run_until([&] { return timers_.scheduled() > before; });
  }

  /** Deletes `directory` (the rules' or its symlink target's) and runs the debounce of its
      events: the file is gone (one failure, the rules kept). Then, a poll later, creates it
      again with a rule of count 2, and lets a fifth of a second pass. */
  void delete_then_recreate(const rule_file_watcher& watcher, const std::string& directory) {
    const std::uint64_t before = timers_.scheduled();
    fs::remove_all(dir_.path() / directory);
    ASSERT_TRUE(run_until([&] { return timers_.scheduled() > before; }));
    advance(50ms);  // the debounce: the file is gone
    ASSERT_EQ(watcher.status().failures, 1u);
    advance(200ms);  // a poll while the directory is missing: it keeps looking
    fs::create_directory(dir_.path() / directory);
    dir_.write(directory + "/rules.yaml", rules_with_count(2));
    advance(200ms);
  }

  /// Moves the manual clock by `d` and runs the timers that came due.
  void advance(std::chrono::nanoseconds d) {
    time_.advance_ns(d.count());
    timers_.run_due();
  }

  testing::temp_dir dir_;
  manual_clock time_;
  manual_timer_queue timers_{time_};
  boost::asio::io_context io_;
  engine eng_;
};

TEST_F(RuleFileWatcher, StartLoadsTheFileSynchronously) {
  const std::string path = dir_.write("rules.yaml", rules_with_count(1));
  rule_file_watcher watcher(io_.get_executor(), eng_, path, inotify_only);
  const parse_result result = watcher.start();
  ASSERT_TRUE(result.ok()) << result.error_text();
  EXPECT_EQ(count_in_force(), 1);
  const reload_status status = watcher.status();
  EXPECT_EQ(status.file, path);
  EXPECT_TRUE(status.ok);
  EXPECT_EQ(status.error, "");
  EXPECT_EQ(status.successes, 1u);
  EXPECT_EQ(status.failures, 0u);
  EXPECT_GT(status.time_unix_ms, 1'600'000'000'000);
}

TEST_F(RuleFileWatcher, StartWithAMissingFileIsAnErrorAndLoadsNothing) {
  rule_file_watcher watcher(io_.get_executor(), eng_, dir_.file("absent.yaml"), inotify_only);
  const parse_result result = watcher.start();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error_text(),
            dir_.file("absent.yaml") + ":1:1: (file): cannot open: No such file or directory\n");
  EXPECT_EQ(eng_.rules(), rule_set{});
  EXPECT_EQ(watcher.status().failures, 1u);
  EXPECT_FALSE(watcher.status().ok);
}

TEST_F(RuleFileWatcher, StartWithAnInvalidFileIsAnErrorAndLoadsNothing) {
  const std::string path = dir_.write("rules.yaml", "flow:\n  - resource: r\n    count: -1\n");
  rule_file_watcher watcher(io_.get_executor(), eng_, path, inotify_only);
  const parse_result result = watcher.start();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error_text(), path + ":3:12: flow[0].count: must be >= 0\n");
  EXPECT_EQ(eng_.rules(), rule_set{});
}

TEST_F(RuleFileWatcher, AtomicRenameOverTheFileIsInForceOnRealTimers) {
  const std::string path = dir_.write("rules.yaml", rules_with_count(1));
  rule_file_watcher watcher(io_.get_executor(), eng_, path);  // default options: Asio timers
  ASSERT_TRUE(watcher.start().ok());
  dir_.write(".rules.yaml.tmp", rules_with_count(2));
  fs::rename(dir_.file(".rules.yaml.tmp"), path);
  ASSERT_TRUE(run_until([&] { return count_is(2); }, 10s));
  EXPECT_EQ(watcher.status().successes, 2u);
}

TEST_F(RuleFileWatcher, AnEditIsInForceOneDebounceAfterItsEvent) {
  const std::string path = dir_.write("rules.yaml", rules_with_count(1));
  rule_file_watcher watcher(io_.get_executor(), eng_, path, manual_timing());
  ASSERT_TRUE(watcher.start().ok());
  ASSERT_TRUE(replace_and_see(path, 2));
  advance(49ms);
  EXPECT_EQ(count_in_force(), 1);
  advance(1ms);
  EXPECT_EQ(count_in_force(), 2);
  EXPECT_EQ(watcher.status().successes, 2u);
}

TEST_F(RuleFileWatcher, AStreamOfEventsStillReloadsWithinFourDebouncesOfTheFirst) {
  const std::string path = dir_.write("rules.yaml", rules_with_count(1));
  rule_file_watcher watcher(io_.get_executor(), eng_, path, manual_timing());
  ASSERT_TRUE(watcher.start().ok());
  int count = 1;
  for (int step = 0; step < 4; ++step) {  // an event every 40 ms keeps restarting the debounce
    ASSERT_TRUE(replace_and_see(path, ++count));
    advance(40ms);
  }
  EXPECT_EQ(count_in_force(), 1);  // 160 ms: every debounce was restarted
  ASSERT_TRUE(replace_and_see(path, ++count));
  advance(40ms);  // 200 ms = 4 x 50 ms after the first event
  EXPECT_EQ(count_in_force(), count);
}

TEST_F(RuleFileWatcher, InPlaceTruncateAndWriteIsSeen) {
  const std::string path = dir_.write("rules.yaml", rules_with_count(1));
  rule_file_watcher watcher(io_.get_executor(), eng_, path, inotify_only);
  ASSERT_TRUE(watcher.start().ok());
  dir_.write("rules.yaml", rules_with_count(2));  // O_TRUNC then write, same inode
  ASSERT_TRUE(run_until([&] { return count_is(2); }));
  EXPECT_EQ(watcher.status().failures, 0u);
}

TEST_F(RuleFileWatcher, KubernetesConfigMapSymlinkSwapIsSeen) {
  // rules.yaml -> ..data/rules.yaml, ..data -> ..v1 (what the kubelet mounts).
  fs::create_directory(dir_.path() / "..v1");
  dir_.write("..v1/rules.yaml", rules_with_count(1));
  fs::create_directory_symlink("..v1", dir_.path() / "..data");
  fs::create_symlink("..data/rules.yaml", dir_.path() / "rules.yaml");
  rule_file_watcher watcher(io_.get_executor(), eng_, dir_.file("rules.yaml"), inotify_only);
  ASSERT_TRUE(watcher.start().ok());
  ASSERT_EQ(count_in_force(), 1);

  // The kubelet's update: new timestamped directory, ..data_tmp symlink, atomic rename.
  fs::create_directory(dir_.path() / "..v2");
  dir_.write("..v2/rules.yaml", rules_with_count(2));
  fs::create_directory_symlink("..v2", dir_.path() / "..data_tmp");
  fs::rename(dir_.path() / "..data_tmp", dir_.path() / "..data");
  fs::remove_all(dir_.path() / "..v1");
  ASSERT_TRUE(run_until([&] { return count_is(2); }));

  // And again: the watch follows the new target.
  fs::create_directory(dir_.path() / "..v3");
  dir_.write("..v3/rules.yaml", rules_with_count(3));
  fs::create_directory_symlink("..v3", dir_.path() / "..data_tmp");
  fs::rename(dir_.path() / "..data_tmp", dir_.path() / "..data");
  fs::remove_all(dir_.path() / "..v2");
  ASSERT_TRUE(run_until([&] { return count_is(3); }));
  EXPECT_EQ(watcher.status().failures, 0u);
}

// An audit: a directory symlink on the path (not the file's own link) was swapped, and only
// the poll saw it, 1.3-1.8 s later (SPEC §3: in force within 1 s).
TEST_F(RuleFileWatcher, ASwapOfADirectorySymlinkOnThePathIsSeen) {
  for (const int n : {1, 2, 3}) {
    const std::string d = "d" + std::to_string(n);
    fs::create_directory(dir_.path() / d);
    dir_.write(d + "/rules.yaml", rules_with_count(n));
  }
  fs::create_directory(dir_.path() / "links");
  fs::create_directory_symlink("../d1", dir_.path() / "links/current");
  rule_file_watcher watcher(io_.get_executor(), eng_, dir_.file("links/current/rules.yaml"),
                            inotify_only);
  ASSERT_TRUE(watcher.start().ok());
  ASSERT_EQ(count_in_force(), 1);
  for (const int n : {2, 3}) {  // the second swap: the watch follows
    fs::create_directory_symlink("../d" + std::to_string(n), dir_.path() / "links/next");
    fs::rename(dir_.path() / "links/next", dir_.path() / "links/current");
    ASSERT_TRUE(run_until([&] { return count_is(n); })) << "swap to d" << n;
  }
  EXPECT_EQ(watcher.status().failures, 0u);
}

// A review: a link met inside another link's target (`current` -> `../live`, `live` -> `d1`)
// was not watched, and its swap was seen only by the poll.
TEST_F(RuleFileWatcher, ASwapOfASymlinkReachedThroughAnotherIsSeen) {
  for (const int n : {1, 2}) {
    const std::string d = "d" + std::to_string(n);
    fs::create_directory(dir_.path() / d);
    dir_.write(d + "/rules.yaml", rules_with_count(n));
  }
  fs::create_directory_symlink("d1", dir_.path() / "live");
  fs::create_directory(dir_.path() / "links");
  fs::create_directory_symlink("../live", dir_.path() / "links/current");
  fs::create_directory(dir_.path() / "conf");
  fs::create_symlink("../links/current/rules.yaml", dir_.path() / "conf/rules.yaml");
  rule_file_watcher watcher(io_.get_executor(), eng_, dir_.file("conf/rules.yaml"), inotify_only);
  ASSERT_TRUE(watcher.start().ok());
  ASSERT_EQ(count_in_force(), 1);
  fs::create_directory_symlink("d2", dir_.path() / "live.next");
  fs::rename(dir_.path() / "live.next", dir_.path() / "live");
  ASSERT_TRUE(run_until([&] { return count_is(2); }));
}

TEST_F(RuleFileWatcher, InPlaceEditOfASymlinkTargetInAnotherDirectoryIsSeen) {
  fs::create_directory(dir_.path() / "elsewhere");
  const std::string target = dir_.write("elsewhere/real.yaml", rules_with_count(1));
  fs::create_directory(dir_.path() / "conf");
  fs::create_symlink(target, dir_.path() / "conf/rules.yaml");
  rule_file_watcher watcher(io_.get_executor(), eng_, dir_.file("conf/rules.yaml"), inotify_only);
  ASSERT_TRUE(watcher.start().ok());
  dir_.write("elsewhere/real.yaml", rules_with_count(2));
  ASSERT_TRUE(run_until([&] { return count_is(2); }));
}

TEST_F(RuleFileWatcher, DeletedFileKeepsTheRulesAndARecreatedOneLoads) {
  const std::string path = dir_.write("rules.yaml", rules_with_count(1));
  rule_file_watcher watcher(io_.get_executor(), eng_, path, inotify_only);
  ASSERT_TRUE(watcher.start().ok());

  fs::remove(path);
  ASSERT_TRUE(run_until([&] { return watcher.status().failures == 1; }));
  EXPECT_EQ(watcher.status().error,
            path + ":1:1: (file): cannot open: No such file or directory\n");
  EXPECT_EQ(count_in_force(), 1);

  dir_.write("rules.yaml", rules_with_count(2));
  ASSERT_TRUE(run_until([&] { return count_is(2); }));
  EXPECT_TRUE(watcher.status().ok);
  EXPECT_EQ(watcher.status().successes, 2u);
}

// A writer that pauses mid-file (a script writing in pieces, a slow copy) leaves a prefix that
// may be a valid file of its own: loaded, it dropped the rules after it and reset their state.
TEST_F(RuleFileWatcher, AFileBeingWrittenInPlaceIsNotLoadedUntilItsWriterClosesIt) {
  const std::string path = dir_.write("rules.yaml", rules_with_count(1));
  rule_file_watcher watcher(io_.get_executor(), eng_, path, manual_timing(100ms));
  ASSERT_TRUE(watcher.start().ok());

  const std::string prefix = rules_with_count(2);  // the first rule: valid alone
  const std::string rest = "  - resource: s\n    count: 5\n";
  const std::uint64_t armed = timers_.scheduled();
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(prefix.c_str(), f);
  std::fflush(f);  // the writer pauses here, the file still open
  ASSERT_TRUE(run_until([&] { return timers_.scheduled() > armed; }));  // its events arrived
  advance(50ms);   // a debounce,
  advance(100ms);        // and two polls
  advance(100ms);
  EXPECT_EQ(count_in_force(), 1);
  EXPECT_EQ(watcher.status().successes, 1u);
  EXPECT_EQ(watcher.status().failures, 0u);

  const std::uint64_t before = timers_.scheduled();
  std::fputs(rest.c_str(), f);
  std::fclose(f);
  ASSERT_TRUE(run_until([&] { return timers_.scheduled() > before; }));
  advance(50ms);
  EXPECT_EQ(eng_.rules().flow.size(), 2u);
  EXPECT_TRUE(watcher.status().ok);
}

// A writer that keeps the file open (a long-lived descriptor) and goes quiet: read 800 ms after
// its last write, so it is in force within a second (SPEC §3), not only at the next few polls.
TEST_F(RuleFileWatcher, AWriterThatNeverClosesIsReadOnceItHasBeenQuietFor800Ms) {
  const std::string path = dir_.write("rules.yaml", rules_with_count(1));
  rule_file_watcher watcher(io_.get_executor(), eng_, path, manual_timing());
  ASSERT_TRUE(watcher.start().ok());
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  const std::uint64_t before = timers_.scheduled();
  std::fputs(rules_with_count(2).c_str(), f);
  std::fflush(f);  // and the file stays open
  ASSERT_TRUE(run_until([&] { return timers_.scheduled() > before; }));  // the settle timer
  advance(799ms);
  EXPECT_EQ(count_in_force(), 1);
  advance(1ms);
  EXPECT_EQ(count_in_force(), 2);
  std::fclose(f);
}

// The same through a symlink whose target's directory was deleted: the link's own directory is
// watched, but the target's is missing, and only the poll can find it again.
TEST_F(RuleFileWatcher, ASymlinkIntoARecreatedDirectoryIsReadAgainWithinAFifthOfASecond) {
  fs::create_directory(dir_.path() / "real");
  dir_.write("real/rules.yaml", rules_with_count(1));
  fs::create_directory(dir_.path() / "conf");
  fs::create_symlink(dir_.path() / "real/rules.yaml", dir_.path() / "conf/rules.yaml");
  rule_file_watcher watcher(io_.get_executor(), eng_, dir_.file("conf/rules.yaml"),
                            manual_timing(2000ms));
  ASSERT_TRUE(watcher.start().ok());
  delete_then_recreate(watcher, "real");
  EXPECT_EQ(count_in_force(), 2);
}

// A partial write that is invalid is rejected when its writer closes the file, and the next
// complete write loads.
TEST_F(RuleFileWatcher, PartialWriteIsRejectedAndItsCompletionLoads) {
  const std::string path = dir_.write("rules.yaml", rules_with_count(1));
  rule_file_watcher watcher(io_.get_executor(), eng_, path, inotify_only);
  ASSERT_TRUE(watcher.start().ok());

  const std::string complete = rules_with_count(2);
  const std::string partial = complete.substr(0, complete.find("count") + 3);  // "...cou"
  dir_.write("rules.yaml", partial);  // a writer that stopped there, and closed
  ASSERT_TRUE(run_until([&] { return watcher.status().failures == 1; }));
  EXPECT_EQ(count_in_force(), 1);

  dir_.write("rules.yaml", complete);
  ASSERT_TRUE(run_until([&] { return count_is(2); }));
  EXPECT_TRUE(watcher.status().ok);
}

// A deleted and recreated directory has no watch until the poll adds one again: while it is
// missing, the poll runs every fifth of a second, so the new file is in force within 1 s.
TEST_F(RuleFileWatcher, ARecreatedDirectoryIsWatchedAgainWithinAFifthOfASecond) {
  fs::create_directory(dir_.path() / "conf");
  const std::string path = dir_.write("conf/rules.yaml", rules_with_count(1));
  rule_file_watcher watcher(io_.get_executor(), eng_, path, manual_timing(2000ms));
  ASSERT_TRUE(watcher.start().ok());
  delete_then_recreate(watcher, "conf");
  EXPECT_EQ(count_in_force(), 2);
}

TEST_F(RuleFileWatcher, RapidSuccessiveEditsEndWithTheLastInForce) {
  const std::string path = dir_.write("rules.yaml", rules_with_count(1));
  rule_file_watcher watcher(io_.get_executor(), eng_, path, inotify_only);
  ASSERT_TRUE(watcher.start().ok());
  for (int count = 2; count <= 30; ++count) {
    dir_.write(".tmp", rules_with_count(count));
    fs::rename(dir_.file(".tmp"), path);
    io_.poll();  // let some events in between, as a running server would
  }
  ASSERT_TRUE(run_until([&] { return count_is(30); }));
  const reload_status status = watcher.status();
  EXPECT_EQ(status.failures, 0u);
  EXPECT_LE(status.successes, 30u);  // bursts coalesce; never more than one per edit
}

TEST_F(RuleFileWatcher, TouchAndUnchangedContentAreNotAttempts) {
  const std::string path = dir_.write("rules.yaml", rules_with_count(1));
  rule_file_watcher watcher(io_.get_executor(), eng_, path, manual_timing(100ms));
  ASSERT_TRUE(watcher.start().ok());
  const std::uint64_t version = eng_.rules_version();
  const std::uint64_t before = timers_.scheduled();
  ASSERT_EQ(::utime(path.c_str(), nullptr), 0);  // touch
  ASSERT_TRUE(run_until([&] { return timers_.scheduled() > before; }));
  ASSERT_TRUE(replace_and_see(path, 1));  // same bytes again
  for (int i = 0; i < 8; ++i) {                   // several debounces and polls
    io_.poll();
    advance(50ms);
  }
  EXPECT_EQ(watcher.status().successes, 1u);
  EXPECT_EQ(eng_.rules_version(), version);
}

TEST_F(RuleFileWatcher, PollingSeesAChangeNoDirectoryEventReports) {
  // Written through a hard link in another directory: the watched directory gets no event.
  const std::string path = dir_.write("rules.yaml", rules_with_count(1));
  fs::create_directory(dir_.path() / "other");
  fs::create_hard_link(path, dir_.path() / "other/link.yaml");
  rule_file_watcher watcher(io_.get_executor(), eng_, path, manual_timing(100ms));
  ASSERT_TRUE(watcher.start().ok());
  dir_.write("other/link.yaml", rules_with_count(2));
  advance(99ms);
  EXPECT_EQ(count_in_force(), 1);
  advance(1ms);  // the poll
  EXPECT_EQ(count_in_force(), 2);
}

TEST_F(RuleFileWatcher, ABadEditKeepsTheRulesAndTheFixLoads) {
  const std::string path = dir_.write("rules.yaml", rules_with_count(1));
  rule_file_watcher watcher(io_.get_executor(), eng_, path, inotify_only);
  ASSERT_TRUE(watcher.start().ok());
  dir_.write("rules.yaml", "flow:\n  - resource: r\n    count: lots\n");
  ASSERT_TRUE(run_until([&] { return watcher.status().failures == 1; }));
  EXPECT_EQ(watcher.status().error,
            path + ":3:12: flow[0].count: must be a number, not \"lots\"\n");
  EXPECT_EQ(count_in_force(), 1);
  dir_.write("rules.yaml", rules_with_count(3));
  ASSERT_TRUE(run_until([&] { return count_is(3); }));
  EXPECT_TRUE(watcher.status().ok);
  EXPECT_EQ(watcher.status().error, "");
  EXPECT_EQ(watcher.status().successes, 2u);
}

TEST_F(RuleFileWatcher, ReloadNowAttemptsEvenWhenNothingChanged) {
  const std::string path = dir_.write("rules.yaml", rules_with_count(1));
  rule_file_watcher watcher(io_.get_executor(), eng_, path, inotify_only);
  ASSERT_TRUE(watcher.start().ok());
  EXPECT_TRUE(watcher.reload_now().ok());
  EXPECT_EQ(watcher.status().successes, 2u);
}

TEST_F(RuleFileWatcher, EveryAttemptAfterStartIsReportedWithItsStatus) {
  const std::string path = dir_.write("rules.yaml", rules_with_count(1));
  std::vector<reload_status> reported;
  watcher_options options = manual_timing();
  options.on_attempt = [&](const reload_status& s) { reported.push_back(s); };
  rule_file_watcher watcher(io_.get_executor(), eng_, path, options);
  ASSERT_TRUE(watcher.start().ok());
  EXPECT_TRUE(reported.empty()) << "start() returns its result; it is not reported";

  const std::uint64_t before = timers_.scheduled();
  dir_.write(".rules.yaml.tmp", "flow:\n  - resource: r\n    count: -1\n");
  fs::rename(dir_.file(".rules.yaml.tmp"), path);
  ASSERT_TRUE(run_until([&] { return timers_.scheduled() > before; }));
  advance(50ms);
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_FALSE(reported[0].ok);
  EXPECT_EQ(reported[0].file, path);
  EXPECT_EQ(reported[0].error, path + ":3:12: flow[0].count: must be >= 0\n");
  EXPECT_EQ(reported[0].failures, 1u);

  ASSERT_TRUE(replace_and_see(path, 2));
  advance(50ms);
  ASSERT_EQ(reported.size(), 2u);
  EXPECT_TRUE(reported[1].ok);
  EXPECT_EQ(reported[1].error, "");
  EXPECT_EQ(reported[1].successes, 2u);

  EXPECT_TRUE(watcher.reload_now().ok());
  ASSERT_EQ(reported.size(), 3u);
  EXPECT_TRUE(reported[2].ok);
  EXPECT_EQ(reported[2].successes, 3u);
}

TEST_F(RuleFileWatcher, StoppedWatcherNoLongerReloads) {
  const std::string path = dir_.write("rules.yaml", rules_with_count(1));
  rule_file_watcher watcher(io_.get_executor(), eng_, path, manual_timing(50ms));
  ASSERT_TRUE(watcher.start().ok());
  watcher.stop();
  watcher.stop();
  EXPECT_EQ(timers_.pending(), 0u);  // the poll was cancelled
  dir_.write("rules.yaml", rules_with_count(2));
  io_.poll();
  advance(1s);
  EXPECT_EQ(count_in_force(), 1);
}

TEST_F(RuleFileWatcher, DestroyingTheWatcherWithPendingWorkIsSafe) {
  const std::string path = dir_.write("rules.yaml", rules_with_count(1));
  {
    rule_file_watcher watcher(io_.get_executor(), eng_, path, manual_timing());
    ASSERT_TRUE(watcher.start().ok());
    ASSERT_TRUE(replace_and_see(path, 2));
  }
  EXPECT_EQ(timers_.pending(), 0u);  // destroying stops: debounce and poll are cancelled
  advance(1s);
  io_.poll();
  EXPECT_EQ(count_in_force(), 1);
}

}  // namespace
}  // namespace floodgate::config
