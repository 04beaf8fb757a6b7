// Runs the real floodgate-demo binary for black-box tests, and rule files for it.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace floodgate::test {

/// Path of the demo binary under test; empty when the demo was not built.
std::string demo_path();

/// A temporary directory with a rules file in it; removed on destruction.
class rules_dir {
 public:
  explicit rules_dir(const std::string& yaml);
  ~rules_dir();
  rules_dir(const rules_dir&) = delete;
  rules_dir& operator=(const rules_dir&) = delete;

  std::string path() const { return (dir_ / "rules.yaml").string(); }
  /// Replaces the file as editors do: write a temporary file, rename it over the old one.
  void replace(const std::string& yaml) const;

 private:
  std::filesystem::path dir_;
};

/** A running floodgate-demo on free ports (`--port 0 --admin-port 0` unless given).

    The constructor waits for the two start-up lines and fails the test if they do not come.
    The destructor kills the process if it is still running.
*/
class demo_process {
 public:
  explicit demo_process(std::vector<std::string> args);
  ~demo_process();
  demo_process(const demo_process&) = delete;
  demo_process& operator=(const demo_process&) = delete;

  bool started() const { return port_ != 0 && admin_port_ != 0; }
  std::uint16_t port() const { return port_; }
  std::uint16_t admin_port() const { return admin_port_; }
  int pid() const { return pid_; }

  void signal(int sig) const;
  /// The exit code, or -1 if the process did not exit within `timeout` (or was signalled).
  int wait(std::chrono::milliseconds timeout);
  std::string out() const;
  std::string err() const;

  struct impl;

 private:
  int pid_ = -1;
  std::uint16_t port_ = 0;
  std::uint16_t admin_port_ = 0;
  std::shared_ptr<impl> impl_;
};

/// Runs the demo with `args` to completion; for start-up failures.
struct demo_result {
  int exit_code = -1;
  std::string out;
  std::string err;
};
demo_result run_demo(std::vector<std::string> args, std::chrono::milliseconds timeout);

/// Polls `condition` every 10 ms until it holds or `timeout` passes; returns whether it held.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout);

}  // namespace floodgate::test
