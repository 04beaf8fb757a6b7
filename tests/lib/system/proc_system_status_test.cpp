// The /proc sampler, fed with fake files and a manual clock.
#include <floodgate/system/proc_system_status.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace floodgate {
namespace {

namespace fs = std::filesystem;

class ProcSystemStatus : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("floodgate-proc-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  /// /proc/stat with `busy` user jiffies and `idle` idle jiffies.
  void write_machine(int busy, int idle) {
    write("stat", "cpu  " + std::to_string(busy) + " 0 0 " + std::to_string(idle) +
                      " 0 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n");
  }
  /// /proc/self/stat whose command name has spaces and parentheses; utime + stime = ticks.
  void write_process(int ticks) {
    write("self_stat", "4242 (my (odd) name) S 1 2 3 4 5 6 7 8 9 10 " + std::to_string(ticks) +
                           " 0 0 0 20 0 1 0 100 200\n");
  }

  proc_system_status make() {
    proc_system_status::options o;
    o.loadavg_path = (dir_ / "loadavg").string();
    o.stat_path = (dir_ / "stat").string();
    o.self_stat_path = (dir_ / "self_stat").string();
    o.time = &time_;
    o.cores = 2;
    o.ticks_per_second = 100;
    o.start_thread = false;
    return proc_system_status(o);
  }

  fs::path dir_;
  manual_clock time_;
};

TEST_F(ProcSystemStatus, ReadingsAreMinusOneBeforeTheFirstSample) {
  auto s = make();
  EXPECT_EQ(s.load1(), -1);
  EXPECT_EQ(s.cpu_usage(), -1);
}

// A scrape just after start-up read NaN: the first sample was the thread's, racing the scrape.
TEST_F(ProcSystemStatus, WithItsThreadTheLoadIsKnownOnceConstructed) {
  write("loadavg", "0.75 0.80 0.50 2/345 6789\n");
  write_machine(100, 300);
  write_process(10);
  proc_system_status::options o;
  o.loadavg_path = (dir_ / "loadavg").string();
  o.stat_path = (dir_ / "stat").string();
  o.self_stat_path = (dir_ / "self_stat").string();
  o.time = &time_;
  o.period = std::chrono::hours(24);  // the thread samples nothing during the test
  const proc_system_status s(o);
  EXPECT_DOUBLE_EQ(s.load1(), 0.75);
  EXPECT_EQ(s.cpu_usage(), -1) << "CPU needs a second sample";
}

TEST_F(ProcSystemStatus, LoadComesFromTheFirstFieldOfLoadavg) {
  write("loadavg", "1.25 0.80 0.50 2/345 6789\n");
  auto s = make();
  s.sample_once();
  EXPECT_DOUBLE_EQ(s.load1(), 1.25);
}

TEST_F(ProcSystemStatus, CpuNeedsTwoSamples) {
  write_machine(100, 900);
  write_process(0);
  auto s = make();
  s.sample_once();
  EXPECT_EQ(s.cpu_usage(), -1);
}

TEST_F(ProcSystemStatus, CpuIsTheMachineShareWhenItIsHigher) {
  write_machine(100, 900);
  write_process(0);
  auto s = make();
  s.sample_once();
  write_machine(160, 940);  // 60 busy of 100
  write_process(50);        // 0.5 s of CPU in 1 s on 2 cores: 0.25
  time_.advance_ms(1000);
  s.sample_once();
  EXPECT_DOUBLE_EQ(s.machine_cpu_usage(), 0.6);
  EXPECT_DOUBLE_EQ(s.process_cpu_usage(), 0.25);
  EXPECT_DOUBLE_EQ(s.cpu_usage(), 0.6);
}

TEST_F(ProcSystemStatus, CpuIsTheProcessShareWhenItIsHigher) {
  write_machine(100, 900);
  write_process(1000);
  auto s = make();
  s.sample_once();
  write_machine(120, 980);  // 0.2
  write_process(1180);      // 1.8 s of CPU in 1 s on 2 cores: 0.9
  time_.advance_ms(1000);
  s.sample_once();
  EXPECT_DOUBLE_EQ(s.process_cpu_usage(), 0.9);
  EXPECT_DOUBLE_EQ(s.cpu_usage(), 0.9);
}

TEST_F(ProcSystemStatus, UnreadableFilesKeepTheLastReadings) {
  write("loadavg", "0.5 0.5 0.5 1/1 1\n");
  auto s = make();
  s.sample_once();
  fs::remove(dir_ / "loadavg");
  write("stat", "garbage");
  s.sample_once();
  EXPECT_DOUBLE_EQ(s.load1(), 0.5);
  EXPECT_EQ(s.cpu_usage(), -1);
}

TEST(ProcSystemStatusLive, ReadsThisMachinesProcFiles) {
  proc_system_status::options o;
  o.start_thread = false;
  proc_system_status s(o);
  s.sample_once();
  EXPECT_GE(s.load1(), 0);
  s.sample_once();
  EXPECT_GE(s.cpu_usage(), 0);
  EXPECT_LE(s.cpu_usage(), 1);
}

/// The ids of the process's threads now.
std::set<std::string> thread_ids() {
  std::set<std::string> ids;
  for (const auto& t : fs::directory_iterator("/proc/self/task")) ids.insert(t.path().filename());
  return ids;
}

/** Whether thread `id` leaves /proc/self/task within two seconds. A thread that ended is still
    listed for a moment (pthread_join returns when the kernel clears its id, before the task is
    released); one that was never told to stop is still there two seconds later. */
bool leaves(const std::string& id) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (thread_ids().contains(id)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(ProcSystemStatusLive, TheSamplerThreadStopsWhenDestroyed) {
  // The destructor wakes the sampler instead of waiting out its period: with a day-long
  // period, a destructor that waited would hang here until ctest's timeout fails the test;
  // one that returned without stopping it would leave the thread behind.
  proc_system_status::options o;
  o.period = std::chrono::hours(24);
  std::thread([] {}).join();  // a sanitizer's runtime starts its own thread with the first one
  for (int i = 0; i < 3; ++i) {
    const std::set<std::string> before = thread_ids();
    std::vector<std::string> started;
    {
      proc_system_status s(o);
      const std::set<std::string> during = thread_ids();
      std::set_difference(during.begin(), during.end(), before.begin(), before.end(),
                          std::back_inserter(started));
      EXPECT_EQ(started.size(), 1u) << "the sampler runs on a thread of its own";
    }
    for (const std::string& id : started) EXPECT_TRUE(leaves(id)) << "the sampler's thread is gone";
  }
}

TEST(ProcessSystemStatus, OneSamplerIsSharedWhileInUse) {
  std::weak_ptr<system_status_source> seen;
  {
    const auto a = process_system_status();
    const auto b = process_system_status();
    EXPECT_EQ(a, b);
    seen = a;
  }
  EXPECT_TRUE(seen.expired()) << "the last reference stops and frees the sampler";
}

}  // namespace
}  // namespace floodgate
