#include "support/demo_process.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace floodgate::test {

namespace {

using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

/// Start-up may be slow under sanitizers on a busy machine.
constexpr milliseconds startup_timeout{30'000};

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << text;
}

std::uint16_t port_after(const std::string& text, const std::string& prefix) {
  const auto at = text.find(prefix);
  if (at == std::string::npos) return 0;
  const auto end = text.find('\n', at);
  if (end == std::string::npos) return 0;
  const std::string line = text.substr(at, end - at);
  return static_cast<std::uint16_t>(std::atoi(line.substr(line.rfind(':') + 1).c_str()));
}

bool has_flag(const std::vector<std::string>& args, const std::string& flag) {
  return std::any_of(args.begin(), args.end(), [&](const std::string& a) {
    return a == flag || a.rfind(flag + "=", 0) == 0;
  });
}

}  // namespace

std::string demo_path() {
#ifdef FLOODGATE_DEMO_PATH
  return FLOODGATE_DEMO_PATH;
#else
  return {};
#endif
}

rules_dir::rules_dir(const std::string& yaml) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "floodgate-demo-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  write_file(dir_ / "rules.yaml", yaml);
}

rules_dir::~rules_dir() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void rules_dir::replace(const std::string& yaml) const {
  write_file(dir_ / ".rules.yaml.tmp", yaml);
  std::filesystem::rename(dir_ / ".rules.yaml.tmp", dir_ / "rules.yaml");
}

struct demo_process::impl {
  std::mutex mutex;
  std::condition_variable changed;
  std::string out;
  std::string err;
  bool out_closed = false;
  std::thread out_reader;
  std::thread err_reader;
  bool reaped = false;
  int status = 0;

  void read(int fd, std::string impl::*into, bool is_out) {
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      const std::lock_guard lock(mutex);
      if (n <= 0) {
        if (is_out) out_closed = true;
        changed.notify_all();
        break;
      }
      (this->*into).append(buf, static_cast<std::size_t>(n));
      changed.notify_all();
    }
    ::close(fd);
  }
};

demo_process::demo_process(std::vector<std::string> args) : impl_(std::make_shared<impl>()) {
  if (!has_flag(args, "--port")) args.insert(args.end(), {"--port", "0"});
  if (!has_flag(args, "--admin-port")) args.insert(args.end(), {"--admin-port", "0"});
  const std::string binary = demo_path();
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(binary.c_str()));
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int out_pipe[2];
  int err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  posix_spawn_file_actions_addclose(&actions, out_pipe[0]);
  posix_spawn_file_actions_addclose(&actions, err_pipe[0]);
  const int rc = posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    pid_ = -1;
    ADD_FAILURE() << "cannot start " << binary;
    return;
  }
  impl_->out_reader = std::thread([p = impl_, fd = out_pipe[0]] { p->read(fd, &impl::out, true); });
  impl_->err_reader = std::thread([p = impl_, fd = err_pipe[0]] { p->read(fd, &impl::err, false); });

  std::unique_lock lock(impl_->mutex);
  impl_->changed.wait_for(lock, startup_timeout, [&] {
    port_ = port_after(impl_->out, "listening on http://");
    admin_port_ = port_after(impl_->out, "admin on http://");
    return started() || impl_->out_closed;
  });
  if (!started()) {
    ADD_FAILURE() << "demo did not start; stdout:\n" << impl_->out << "\nstderr:\n" << impl_->err;
  }
}

demo_process::~demo_process() {
  if (pid_ > 0 && !impl_->reaped) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    impl_->reaped = true;
  }
  if (impl_->out_reader.joinable()) impl_->out_reader.join();
  if (impl_->err_reader.joinable()) impl_->err_reader.join();
}

void demo_process::signal(int sig) const {
  if (pid_ > 0) ::kill(pid_, sig);
}

int demo_process::wait(milliseconds timeout) {
  if (pid_ <= 0) return -1;
  const auto deadline = clock_type::now() + timeout;
  while (!impl_->reaped) {
    const pid_t r = ::waitpid(pid_, &impl_->status, WNOHANG);
    if (r == pid_) {
      impl_->reaped = true;
      break;
    }
    if (clock_type::now() >= deadline) return -1;
    std::this_thread::sleep_for(milliseconds(10));
  }
  if (impl_->out_reader.joinable()) impl_->out_reader.join();
  if (impl_->err_reader.joinable()) impl_->err_reader.join();
  return WIFEXITED(impl_->status) ? WEXITSTATUS(impl_->status) : -1;
}

std::string demo_process::out() const {
  const std::lock_guard lock(impl_->mutex);
  return impl_->out;
}

std::string demo_process::err() const {
  const std::lock_guard lock(impl_->mutex);
  return impl_->err;
}

demo_result run_demo(std::vector<std::string> args, milliseconds timeout) {
  if (!has_flag(args, "--port")) args.insert(args.end(), {"--port", "0"});
  if (!has_flag(args, "--admin-port")) args.insert(args.end(), {"--admin-port", "0"});
  const std::string binary = demo_path();
  std::string command = binary;
  for (const auto& a : args) command += " '" + a + "'";
  const auto dir = std::filesystem::temp_directory_path();
  const std::string stem = "floodgate-run-" + std::to_string(::getpid());
  const auto out_file = dir / (stem + ".out");
  const auto err_file = dir / (stem + ".err");
  command = "timeout -s KILL " + std::to_string(timeout.count() / 1000 + 1) + " " + command +
            " >" + out_file.string() + " 2>" + err_file.string();
  const int status = std::system(command.c_str());
  demo_result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  const auto slurp = [](const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  };
  r.out = slurp(out_file);
  r.err = slurp(err_file);
  std::error_code ec;
  std::filesystem::remove(out_file, ec);
  std::filesystem::remove(err_file, ec);
  return r;
}

bool eventually(const std::function<bool()>& condition, milliseconds timeout) {
  const auto deadline = clock_type::now() + timeout;
  for (;;) {
    if (condition()) return true;
    if (clock_type::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
}

}  // namespace floodgate::test
