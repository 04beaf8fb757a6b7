// The /proc sampler and the process-wide instance shared by every engine.
#include <floodgate/system/proc_system_status.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <optional>
#include <span>
#include <string_view>

namespace floodgate {

namespace {

/** Reads the start of a small file into `buffer`, without allocating (the sampler must not
    disturb allocation counts); empty on any error. */
std::string_view read_start(const std::string& path, std::span<char> buffer) noexcept {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::size_t used = 0;
  while (used < buffer.size()) {
    const ssize_t n = ::read(fd, buffer.data() + used, buffer.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    used += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return {buffer.data(), used};
}

/// Whitespace-separated fields of a text, one at a time.
class field_reader {
 public:
  explicit field_reader(std::string_view text) noexcept : rest_(text) {}

  std::string_view next() noexcept {
    const auto is_space = [](char c) { return c == ' ' || c == '\n' || c == '\t'; };
    while (!rest_.empty() && is_space(rest_.front())) rest_.remove_prefix(1);
    std::size_t n = 0;
    while (n < rest_.size() && !is_space(rest_[n])) ++n;
    const auto field = rest_.substr(0, n);
    rest_.remove_prefix(n);
    return field;
  }

  template <class T>
  std::optional<T> next_number() noexcept {
    const auto field = next();
    T v{};
    const auto r = std::from_chars(field.data(), field.data() + field.size(), v);
    if (field.empty() || r.ec != std::errc{} || r.ptr != field.data() + field.size()) {
      return std::nullopt;
    }
    return v;
  }

 private:
  std::string_view rest_;
};

/// The first field of /proc/loadavg.
std::optional<double> parse_load1(std::string_view text) noexcept {
  const auto v = field_reader(text).next_number<double>();
  if (!v || *v < 0) return std::nullopt;
  return v;
}

struct machine_times {
  std::uint64_t busy = 0;
  std::uint64_t total = 0;
};

/// The aggregate `cpu` line of /proc/stat (guest time is already part of user time).
std::optional<machine_times> parse_machine(std::string_view text) noexcept {
  field_reader in(text.substr(0, text.find('\n')));
  if (in.next() != "cpu") return std::nullopt;
  std::uint64_t f[8] = {};  // user nice system idle iowait irq softirq steal
  int n = 0;
  for (; n < 8; ++n) {
    const auto v = in.next_number<std::uint64_t>();
    if (!v) break;
    f[n] = *v;
  }
  if (n < 4) return std::nullopt;
  std::uint64_t total = 0;
  for (int i = 0; i < n; ++i) total += f[i];
  return machine_times{total - f[3] - f[4], total};
}

/// utime + stime (fields 14 and 15) of /proc/self/stat; the command name may hold spaces.
std::optional<std::uint64_t> parse_process_ticks(std::string_view text) noexcept {
  const auto close = text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  field_reader in(text.substr(close + 1));
  for (int field = 3; field < 14; ++field) {
    if (in.next().empty()) return std::nullopt;
  }
  const auto utime = in.next_number<std::uint64_t>();
  const auto stime = in.next_number<std::uint64_t>();
  if (!utime || !stime) return std::nullopt;
  return *utime + *stime;
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
    sample_once();
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
  while (!stop_cv_.wait_for(lock, opts_.period, [this] { return stop_; })) {
    lock.unlock();
    sample_once();
    lock.lock();
  }
}

void proc_system_status::sample_once() noexcept {
  std::lock_guard lock(sample_mutex_);
  char buffer[4096];  // the first line of /proc/stat, all of loadavg and self/stat fit
  if (const auto load = parse_load1(read_start(opts_.loadavg_path, buffer))) {
    load1_.store(*load, std::memory_order_relaxed);
  }

  const std::int64_t now_ns = time_.now_ns();
  const auto machine = parse_machine(read_start(opts_.stat_path, buffer));
  const auto process = parse_process_ticks(read_start(opts_.self_stat_path, buffer));
  if (!machine || !process) return;

  if (have_previous_) {
    if (machine->total > previous_machine_.total && machine->busy >= previous_machine_.busy) {
      const auto busy = static_cast<double>(machine->busy - previous_machine_.busy);
      const auto total = static_cast<double>(machine->total - previous_machine_.total);
      machine_cpu_.store(clamp_ratio(busy / total), std::memory_order_relaxed);
    }
    const double elapsed_s = static_cast<double>(now_ns - previous_ns_) / 1e9;
    if (elapsed_s > 0 && *process >= previous_process_ticks_) {
      const double busy_s = static_cast<double>(*process - previous_process_ticks_) /
                            static_cast<double>(opts_.ticks_per_second);
      process_cpu_.store(clamp_ratio(busy_s / elapsed_s / opts_.cores), std::memory_order_relaxed);
    }
    cpu_.store(std::max(process_cpu_.load(std::memory_order_relaxed),
                        machine_cpu_.load(std::memory_order_relaxed)),
               std::memory_order_relaxed);
  }
  have_previous_ = true;
  previous_machine_ = {machine->busy, machine->total};
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
