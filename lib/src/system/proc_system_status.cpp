// The /proc sampler and the process-wide instance shared by every engine.
#include <floodgate/system/proc_system_status.hpp>

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string_view>

namespace floodgate {

namespace {

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return text;
}

/// The first field of /proc/loadavg.
std::optional<double> parse_load1(const std::string& text) {
  std::istringstream in(text);
  double v = 0;
  if (!(in >> v) || v < 0) return std::nullopt;
  return v;
}

/// The aggregate `cpu` line of /proc/stat: busy and total jiffies (guest time is already in user).
std::optional<std::pair<std::uint64_t, std::uint64_t>> parse_machine(const std::string& text) {
  std::istringstream in(text);
  std::string label;
  if (!(in >> label) || label != "cpu") return std::nullopt;
  std::uint64_t f[8] = {};  // user nice system idle iowait irq softirq steal
  int n = 0;
  while (n < 8 && (in >> f[n])) ++n;
  if (n < 4) return std::nullopt;
  std::uint64_t total = 0;
  for (int i = 0; i < n; ++i) total += f[i];
  const std::uint64_t idle = f[3] + f[4];
  return std::pair{total - idle, total};
}

/// utime + stime (fields 14 and 15) of /proc/self/stat; the command name may hold spaces.
std::optional<std::uint64_t> parse_process_ticks(const std::string& text) {
  const auto close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream in(text.substr(close + 1));
  std::string field;
  std::uint64_t utime = 0;
  std::uint64_t stime = 0;
  for (int i = 3; i <= 15; ++i) {
    if (!(in >> field)) return std::nullopt;
    auto* target = i == 14 ? &utime : i == 15 ? &stime : nullptr;
    if (target != nullptr) {
      const auto r = std::from_chars(field.data(), field.data() + field.size(), *target);
      if (r.ec != std::errc{}) return std::nullopt;
    }
  }
  return utime + stime;
}

double clamp_ratio(double v) { return std::clamp(v, 0.0, 1.0); }

}  // namespace

proc_system_status::proc_system_status(options opts)
    : opts_(std::move(opts)), time_(opts_.time != nullptr ? *opts_.time : default_clock()) {
  if (opts_.cores == 0) {
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    opts_.cores = online > 0 ? static_cast<unsigned>(online) : 1;
  }
  if (opts_.ticks_per_second <= 0) {
    const long tck = sysconf(_SC_CLK_TCK);
    opts_.ticks_per_second = tck > 0 ? tck : 100;
  }
  if (opts_.start_thread) {
    thread_ = std::thread([this] { run(); });
  }
}

proc_system_status::~proc_system_status() {
  {
    std::lock_guard lock(stop_mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void proc_system_status::run() {
  std::unique_lock lock(stop_mutex_);
  while (!stop_) {
    lock.unlock();
    try {
      sample_once();
    } catch (...) {
      // Out of memory reading a tiny file: keep the last readings and try again next period.
    }
    lock.lock();
    stop_cv_.wait_for(lock, opts_.period, [this] { return stop_; });
  }
}

void proc_system_status::sample_once() {
  std::lock_guard lock(sample_mutex_);
  if (auto text = read_file(opts_.loadavg_path)) {
    if (auto load = parse_load1(*text)) load1_.store(*load, std::memory_order_relaxed);
  }

  const std::int64_t now_ns = time_.now_ns();
  std::optional<std::pair<std::uint64_t, std::uint64_t>> machine;
  std::optional<std::uint64_t> process;
  if (auto text = read_file(opts_.stat_path)) machine = parse_machine(*text);
  if (auto text = read_file(opts_.self_stat_path)) process = parse_process_ticks(*text);
  if (!machine || !process) return;

  if (have_previous_) {
    const auto d_total = machine->second - previous_machine_.total;
    const auto d_busy = machine->first - previous_machine_.busy;
    if (machine->second > previous_machine_.total && machine->first >= previous_machine_.busy) {
      machine_cpu_.store(clamp_ratio(static_cast<double>(d_busy) / static_cast<double>(d_total)),
                         std::memory_order_relaxed);
    }
    const double elapsed_s = static_cast<double>(now_ns - previous_ns_) / 1e9;
    if (elapsed_s > 0 && *process >= previous_process_ticks_) {
      const double busy_s = static_cast<double>(*process - previous_process_ticks_) /
                            static_cast<double>(opts_.ticks_per_second);
      process_cpu_.store(clamp_ratio(busy_s / elapsed_s / opts_.cores), std::memory_order_relaxed);
    }
    const double usage = std::max(process_cpu_.load(std::memory_order_relaxed),
                                  machine_cpu_.load(std::memory_order_relaxed));
    cpu_.store(usage, std::memory_order_relaxed);
  }
  have_previous_ = true;
  previous_machine_ = {machine->first, machine->second};
  previous_process_ticks_ = *process;
  previous_ns_ = now_ns;
}

std::shared_ptr<system_status_source> process_system_status() {
  // Leaked on purpose: engines may be destroyed during static destruction.
  static auto* mutex = new std::mutex;
  static auto* instance = new std::weak_ptr<proc_system_status>;
  std::lock_guard lock(*mutex);
  if (auto live = instance->lock()) return live;
  auto fresh = std::make_shared<proc_system_status>();
  *instance = fresh;
  return fresh;
}

}  // namespace floodgate
