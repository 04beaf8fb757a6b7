#include "stat/statistic_node.hpp"

#include <algorithm>
#include <array>

namespace floodgate::stat {

namespace {
constexpr int minute_samples = 60;
constexpr int minute_interval_ms = 60'000;
}  // namespace

statistic_node::statistic_node(const window_config& cfg)
    : cfg_(cfg),
      second_(cfg.second_sample_count, cfg.second_interval_ms),
      borrow_(cfg.second_sample_count * 2, cfg.second_interval_ms * 2) {}

statistic_node::~statistic_node() { delete minute_.load(std::memory_order_acquire); }

statistic_node::minute_window* statistic_node::minute_for_fold() noexcept {
  minute_window* m = minute_.load(std::memory_order_acquire);
  if (m != nullptr) [[likely]] {
    return m;
  }
  // Once per node, when it writes its second short window (as the node itself was allocated by
  // its first entry). Racing writers each build one; the first to publish wins.
  minute_window* mine = nullptr;
  try {
    mine = new minute_window(minute_samples, minute_interval_ms);
  } catch (...) {
    return nullptr;
  }
  if (minute_.compare_exchange_strong(m, mine, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
    return mine;
  }
  delete mine;
  return m;
}

void statistic_node::add_concurrency(std::int64_t delta) noexcept {
  const writer_shard shard = this_thread_shard();
  write_point p{};
  p.shard = shard.index;
  p.exclusive = shard.exclusive;
  add_concurrency(p, delta);
}

void statistic_node::add_concurrency_slow(write_point p, std::int64_t delta) noexcept {
  second_bucket* ring = ring_for(p);
  if (ring == nullptr) {
    return;
  }
  const auto d = static_cast<std::uint64_t>(delta);  // two's complement: see second_bucket
  if (p.exclusive) {
    if (add_on_cpu(ring[p.bucket].concurrency(), d, p.shard)) {
      return;
    }
    ring = move_to_shared(p);  // the thread runs on another CPU now
    if (ring == nullptr) return;
  }
  ring[p.bucket].concurrency().fetch_add(d, std::memory_order_relaxed);
}

void statistic_node::record_pass_slow(write_point p, std::uint32_t n) noexcept {
  add_second_slow(metric_event::pass, p, n);
  add_concurrency_slow(p, 1);
}

void statistic_node::record_completion_slow(write_point p, std::uint64_t rt,
                                            std::uint32_t n) noexcept {
  add_second_slow(metric_event::success, p, n);
  add_second_slow(metric_event::rt, p, rt);
  add_concurrency_slow(p, -1);
  lower_min_rt(p, rt);
}

second_bucket* statistic_node::move_to_shared(write_point& p) noexcept {
  p.shard = 0;
  p.exclusive = false;
  return rings_.create(0, static_cast<std::size_t>(second_.sample_count()));
}

std::int64_t statistic_node::concurrency() const noexcept {
  // Every bucket's word of every shard: an entry and its exit may add to different ones.
  std::uint64_t sum = 0;
  const auto samples = static_cast<std::size_t>(second_.sample_count());
  for_each_used_shard([&](std::uint32_t i) {
    if (const second_bucket* ring = rings_.get(i)) {
      for (std::size_t b = 0; b < samples; ++b) {
        sum += ring[b].concurrency().load(std::memory_order_relaxed);
      }
    }
  });
  return static_cast<std::int64_t>(sum);
}

void statistic_node::note_window(std::int64_t window) noexcept {
  std::int64_t first = first_window_.load(std::memory_order_relaxed);
  if (first == std::numeric_limits<std::int64_t>::min() &&
      first_window_.compare_exchange_strong(first, window, std::memory_order_relaxed)) {
    return;
  }
  if (window != first) {
    minute_for_fold();
  }
}

void statistic_node::add_second_slow(metric_event e, write_point p, std::uint64_t n) noexcept {
  if (minute() == nullptr) [[unlikely]] {
    note_window(p.window);
  }
  second_bucket* ring = ring_for(p);
  if (ring == nullptr) [[unlikely]] {
    return;
  }
  cell_add_result r;
  if (p.exclusive) {
    r = cell_add_on_cpu(ring[p.bucket].cell(e), p.tag, n, p.shard);
    if (r.moved) {
      ring = move_to_shared(p);  // the thread runs on another CPU now
      if (ring == nullptr) return;
    }
  }
  if (!p.exclusive) {
    r = cell_add_displacing(ring[p.bucket].cell(e), p.tag, n);
  }
  if (!r.rejected && r.displaced == 0) [[likely]] {
    return;
  }
  if (e == metric_event::rt || e == metric_event::occupied_pass) {
    return;  // not kept per minute
  }
  if (r.rejected) {
    // A late event whose short window is already gone still belongs to its second.
    const std::int64_t second = p.window * second_.window_ms() / 1000;
    if (minute_window* m = minute_for_fold(); m != nullptr && second >= 0) {
      m->bucket(second).add(e, cell_tag(second), n);
    }
  } else {
    // Carry the finished window's final value into the minute bucket of its second, if that
    // second is still in the minute window. A word left for longer (a CPU's shard that counted
    // this resource yesterday) would replace the count of the recent second sharing its bucket,
    // and one written on a clock since stepped back reads as older than it is (a negative second
    // has no bucket at all): both are dropped.
    const std::int64_t age =
        static_cast<std::int64_t>((p.tag - (r.displaced >> cell_value_bits)) & cell_tag_mask);
    const std::int64_t second = (p.window - age) * second_.window_ms() / 1000;
    const std::int64_t now_second = p.ms / 1000;
    if (minute_window* m = minute_for_fold();
        m != nullptr && second >= 0 && second > now_second - minute_samples) {
      m->bucket(second).add(e, cell_tag(second), r.displaced & cell_value_mask);
    }
  }
}

void statistic_node::lower_min_rt_slow(write_point p, std::uint64_t rt) noexcept {
  second_bucket* ring = ring_for(p);
  if (ring == nullptr) [[unlikely]] {
    return;
  }
  if (p.exclusive) {
    if (cell_min_on_cpu(ring[p.bucket].min_rt(), p.tag, rt, p.shard)) {
      return;
    }
    ring = move_to_shared(p);  // the thread runs on another CPU now
    if (ring == nullptr) return;
  }
  cell_min(ring[p.bucket].min_rt(), p.tag, rt);
}

void statistic_node::add_occupied_pass(std::int64_t now_ms, std::uint32_t n) noexcept {
  const std::int64_t mw = now_ms / 1000;
  if (minute_window* m = minute_for_fold()) m->bucket(mw).add(metric_event::pass, cell_tag(mw), n);
  add_second(metric_event::occupied_pass, at(now_ms), n);
}

void statistic_node::add_waiting(std::int64_t future_ms, std::uint32_t n) noexcept {
  const auto w = borrow_.window_of(future_ms);
  cell_add(borrow_.bucket(w).pass, cell_tag(w), n);
}

std::uint64_t statistic_node::borrowed(std::int64_t window) const noexcept {
  return cell_value(borrow_.bucket(window).pass.load(std::memory_order_relaxed), cell_tag(window));
}

std::uint64_t statistic_node::window_value(metric_event e, std::int64_t window) const noexcept {
  // The window's bucket in every shard: the same slot, one ring apart.
  const std::uint64_t tag = cell_tag(window);
  const std::size_t slot = second_.slot(window);
  std::uint64_t sum = 0;
  for_each_used_shard([&](std::uint32_t i) {
    if (const second_bucket* ring = rings_.get(i)) sum += ring[slot].value(e, tag);
  });
  if (e == metric_event::pass) {
    sum += borrowed(window);
  }
  return sum;
}

template <metric_event... E>
std::array<std::uint64_t, sizeof...(E)> statistic_node::window_sums(
    std::int64_t now_ms) const noexcept {
  constexpr std::size_t N = sizeof...(E);
  // What window_value sums, for each window of the interval, walking the rings backwards from
  // the current slot instead of dividing per window (system rules read this per request).
  std::array<std::uint64_t, N> sums{};
  if (now_ms < 0) {
    return sums;
  }
  const std::int64_t cur = second_.window_of(now_ms);
  const std::size_t samples = static_cast<std::size_t>(second_.sample_count());
  const std::size_t borrow_slots = 2 * samples;  // borrow_ has the same window length
  // The rings written so far (at most one per shard).
  std::array<const second_bucket*, 32> rings;
  std::size_t ring_count = 0;
  for_each_used_shard([&](std::uint32_t i) {
    if (const second_bucket* ring = rings_.get(i)) rings[ring_count++] = ring;
  });
  std::size_t slot = second_.slot(cur);
  std::size_t borrow_slot = borrow_.index(cur, 0);
  for (std::int64_t w = cur; w > cur - static_cast<std::int64_t>(samples) && w >= 0; --w) {
    const std::uint64_t tag = cell_tag(w);
    for (std::size_t r = 0; r < ring_count; ++r) {
      const second_bucket& shard = rings[r][slot];
      std::size_t k = 0;
      ((sums[k++] += shard.value(E, tag)), ...);
    }
    std::size_t k = 0;
    ((E == metric_event::pass
          ? sums[k] += cell_value(borrow_.at(borrow_slot).pass.load(std::memory_order_relaxed), tag)
          : 0,
      ++k),
     ...);
    slot = slot == 0 ? samples - 1 : slot - 1;
    borrow_slot = borrow_slot == 0 ? borrow_slots - 1 : borrow_slot - 1;
  }
  return sums;
}

std::uint64_t statistic_node::window_sum(metric_event e, std::int64_t now_ms) const noexcept {
  switch (e) {
    case metric_event::pass:
      return window_sums<metric_event::pass>(now_ms)[0];
    case metric_event::block:
      return window_sums<metric_event::block>(now_ms)[0];
    case metric_event::success:
      return window_sums<metric_event::success>(now_ms)[0];
    case metric_event::exception:
      return window_sums<metric_event::exception>(now_ms)[0];
    case metric_event::rt:
      return window_sums<metric_event::rt>(now_ms)[0];
    case metric_event::occupied_pass:
      return window_sums<metric_event::occupied_pass>(now_ms)[0];
  }
  return 0;
}

window_reading statistic_node::read_window(std::int64_t now_ms) const noexcept {
  const auto s = window_sums<metric_event::pass, metric_event::success, metric_event::rt>(now_ms);
  const double seconds = second_.interval_sec();
  return {static_cast<double>(s[0]) / seconds,
          s[1] == 0 ? 0.0 : static_cast<double>(s[2]) / static_cast<double>(s[1])};
}

std::uint64_t statistic_node::window_pass_at(std::int64_t window_start_ms,
                                             std::int64_t now_ms) const noexcept {
  if (window_start_ms < 0) {
    return 0;
  }
  const auto& ring = second_;
  const auto w = ring.window_of(window_start_ms);
  const auto cur = ring.window_of(now_ms);
  if (w > cur || w <= cur - ring.sample_count()) {
    return 0;
  }
  return window_value(metric_event::pass, w);
}

std::uint64_t statistic_node::waiting(std::int64_t now_ms) const noexcept {
  // Future windows up to one interval ahead (Sentinel's FutureBucketLeapArray holds that many).
  std::uint64_t sum = 0;
  const auto& ring = second_;
  const auto cur = ring.window_of(now_ms);
  for (std::int64_t w = cur + 1; w <= cur + ring.sample_count(); ++w) {
    sum += borrowed(w);
  }
  return sum;
}

std::uint64_t statistic_node::waiting_at(std::int64_t window_start_ms,
                                         std::int64_t now_ms) const noexcept {
  const auto& ring = second_;
  const auto w = ring.window_of(window_start_ms);
  const auto cur = ring.window_of(now_ms);
  return w > cur && w <= cur + ring.sample_count() ? borrowed(w) : 0;
}

double statistic_node::pass_qps(std::int64_t now_ms) const noexcept {
  return static_cast<double>(window_sum(metric_event::pass, now_ms)) / second_.interval_sec();
}
double statistic_node::block_qps(std::int64_t now_ms) const noexcept {
  return static_cast<double>(window_sum(metric_event::block, now_ms)) / second_.interval_sec();
}
double statistic_node::success_qps(std::int64_t now_ms) const noexcept {
  return static_cast<double>(window_sum(metric_event::success, now_ms)) / second_.interval_sec();
}
double statistic_node::exception_qps(std::int64_t now_ms) const noexcept {
  return static_cast<double>(window_sum(metric_event::exception, now_ms)) / second_.interval_sec();
}
double statistic_node::total_qps(std::int64_t now_ms) const noexcept {
  return pass_qps(now_ms) + block_qps(now_ms);
}
double statistic_node::occupied_pass_qps(std::int64_t now_ms) const noexcept {
  return static_cast<double>(window_sum(metric_event::occupied_pass, now_ms)) /
         second_.interval_sec();
}

double statistic_node::avg_rt(std::int64_t now_ms) const noexcept {
  const auto success = window_sum(metric_event::success, now_ms);
  if (success == 0) {
    return 0;
  }
  return static_cast<double>(window_sum(metric_event::rt, now_ms)) / static_cast<double>(success);
}

double statistic_node::min_rt(std::int64_t now_ms) const noexcept {
  auto rt = static_cast<std::uint64_t>(cfg_.statistic_max_rt);
  second_.for_each_window_number(now_ms, [&](std::uint64_t tag, std::int64_t w) {
    for_each_used_shard([&](std::uint32_t i) {
      const second_bucket* ring = rings_.get(i);
      if (ring == nullptr) {
        return;
      }
      const auto word = ring[second_.slot(w)].min_rt().load(std::memory_order_relaxed);
      if (word != 0 && (word >> cell_value_bits) == tag) {
        rt = std::min(rt, word & cell_value_mask);
      }
    });
  });
  return static_cast<double>(std::max<std::uint64_t>(1, rt));
}

double statistic_node::max_success_qps(std::int64_t now_ms) const noexcept {
  std::uint64_t best = 1;
  const auto& ring = second_;
  ring.for_each_window_number(now_ms, [&](std::uint64_t, std::int64_t w) {
    best = std::max(best, window_value(metric_event::success, w));
  });
  return static_cast<double>(best) * ring.sample_count() / ring.interval_sec();
}

std::uint64_t statistic_node::second_tags(metric_event e) const noexcept {
  std::uint64_t h = 0;
  for (std::uint32_t shard = 0; shard < shard_count(); ++shard) {
    const second_bucket* ring = rings_.get(shard);
    h = h * 31 + (ring != nullptr ? 1 : 0);
    for (int i = 0; ring != nullptr && i < second_.sample_count(); ++i) {
      h = h * 31 + (ring[i].cell(e).load(std::memory_order_acquire) >> cell_value_bits);
    }
  }
  return h;
}

std::uint64_t statistic_node::seconds_sum(metric_event e, std::int64_t now_ms,
                                          std::int64_t first_second,
                                          std::int64_t last_second) const noexcept {
  const auto now_window = second_.window_of(now_ms);
  constexpr int max_attempts = 4;
  std::uint64_t total = 0;
  for (int attempt = 0; attempt < max_attempts; ++attempt) {
    const std::uint64_t tags_before = second_tags(e);
    // Values still in the short windows (not yet folded)...
    std::uint64_t unfolded = 0;
    for (std::uint32_t shard = 0; shard < shard_count(); ++shard) {
      const second_bucket* ring = rings_.get(shard);
      for (int i = 0; ring != nullptr && i < second_.sample_count(); ++i) {
        const std::uint64_t word = ring[i].cell(e).load(std::memory_order_acquire);
        if (word == 0) {
          continue;
        }
        if (cell_tag_ahead(word >> cell_value_bits, cell_tag(now_window))) {
          continue;  // a window after `now_ms`
        }
        const auto age = static_cast<std::int64_t>(
            (cell_tag(now_window) - (word >> cell_value_bits)) & cell_tag_mask);
        const std::int64_t second = (now_window - age) * second_.window_ms() / 1000;
        if (second >= first_second && second <= last_second) {
          unfolded += word & cell_value_mask;
        }
      }
    }
    // ...plus what was folded into the minute buckets.
    std::uint64_t folded = 0;
    if (const minute_window* m = minute()) {
      for (std::int64_t s = std::max<std::int64_t>(first_second, 0); s <= last_second; ++s) {
        folded += m->bucket(s).value(e, cell_tag(s));
      }
    }
    total = unfolded + folded;
    if (second_tags(e) == tags_before) {
      break;  // no fold happened while we read
    }
  }
  return total;
}

std::uint64_t statistic_node::minute_sum(metric_event e, std::int64_t now_ms) const noexcept {
  const std::int64_t second = now_ms / 1000;
  return seconds_sum(e, now_ms, second - minute_samples + 1, second);
}

std::uint64_t statistic_node::total_request(std::int64_t now_ms) const noexcept {
  return minute_sum(metric_event::pass, now_ms) + minute_sum(metric_event::block, now_ms);
}
std::uint64_t statistic_node::total_pass(std::int64_t now_ms) const noexcept {
  return minute_sum(metric_event::pass, now_ms);
}
std::uint64_t statistic_node::total_success(std::int64_t now_ms) const noexcept {
  return minute_sum(metric_event::success, now_ms);
}
std::uint64_t statistic_node::block_request(std::int64_t now_ms) const noexcept {
  return minute_sum(metric_event::block, now_ms);
}
std::uint64_t statistic_node::total_exception(std::int64_t now_ms) const noexcept {
  return minute_sum(metric_event::exception, now_ms);
}

double statistic_node::minute_previous(metric_event e, std::int64_t now_ms) const noexcept {
  const std::int64_t prev = now_ms / 1000 - 1;
  if (prev < 0) {
    return 0;
  }
  return static_cast<double>(seconds_sum(e, now_ms, prev, prev));
}

double statistic_node::previous_pass_qps(std::int64_t now_ms) const noexcept {
  return minute_previous(metric_event::pass, now_ms);
}
double statistic_node::previous_block_qps(std::int64_t now_ms) const noexcept {
  return minute_previous(metric_event::block, now_ms);
}

std::int64_t statistic_node::try_occupy_next(std::int64_t now_ms, std::uint32_t acquire,
                                             double threshold,
                                             std::int64_t occupy_timeout_ms) const noexcept {
  const auto& ring = second_;
  const double max_count = threshold * ring.interval_ms() / 1000.0;
  const auto current_borrow = static_cast<double>(waiting(now_ms));
  if (current_borrow >= max_count) {
    return occupy_timeout_ms;
  }
  const std::int64_t window_ms = ring.window_ms();
  std::int64_t earliest = now_ms - now_ms % window_ms + window_ms - ring.interval_ms();
  auto current_pass = static_cast<double>(window_sum(metric_event::pass, now_ms));
  std::int64_t idx = 0;
  while (earliest < now_ms) {
    const std::int64_t wait_ms = idx * window_ms + window_ms - now_ms % window_ms;
    if (wait_ms >= occupy_timeout_ms) {
      break;
    }
    const auto window_pass = static_cast<double>(window_pass_at(earliest, now_ms));
    if (current_pass + current_borrow + acquire - window_pass <= max_count) {
      return wait_ms;
    }
    earliest += window_ms;
    current_pass -= window_pass;
    ++idx;
  }
  return occupy_timeout_ms;
}

}  // namespace floodgate::stat
