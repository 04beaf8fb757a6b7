#include <floodgate/stat/statistic_node.hpp>

#include <algorithm>

namespace floodgate::stat {

namespace {
constexpr int minute_samples = 60;
constexpr int minute_interval_ms = 60'000;
}  // namespace

statistic_node::statistic_node(const window_config& cfg)
    : cfg_(cfg),
      second_(cfg.second_sample_count, cfg.second_interval_ms),
      minute_(minute_samples, minute_interval_ms),
      borrow_(cfg.second_sample_count * 2, cfg.second_interval_ms * 2) {}

void statistic_node::add_second(metric_event e, std::int64_t now_ms, std::uint64_t n) noexcept {
  const auto w = second_.window_of(now_ms);
  const auto tag = cell_tag(w);
  const cell_add_result r =
      cell_add_displacing(second_.bucket(w).cells[static_cast<std::size_t>(e)], tag, n);
  if (e == metric_event::rt) {
    return;
  }
  if (r.rejected) {
    // A late event whose short window is already gone still belongs to its second.
    const std::int64_t second = w * second_.window_ms() / 1000;
    minute_.bucket(second).add(e, cell_tag(second), n);
  } else if (r.displaced != 0) {
    // Carry the finished window's final value into the minute bucket of its second.
    const std::int64_t age =
        static_cast<std::int64_t>((tag - (r.displaced >> cell_value_bits)) & cell_tag_mask);
    const std::int64_t second = (w - age) * second_.window_ms() / 1000;
    minute_.bucket(second).add(e, cell_tag(second), r.displaced & cell_value_mask);
  }
}

void statistic_node::add_pass(std::int64_t now_ms, std::uint32_t n) noexcept {
  add_second(metric_event::pass, now_ms, n);
}

void statistic_node::add_block(std::int64_t now_ms, std::uint32_t n) noexcept {
  add_second(metric_event::block, now_ms, n);
}

void statistic_node::add_exception(std::int64_t now_ms, std::uint32_t n) noexcept {
  add_second(metric_event::exception, now_ms, n);
}

void statistic_node::add_rt_and_success(std::int64_t now_ms, std::int64_t rt_ms,
                                        std::uint32_t n) noexcept {
  const auto rt = static_cast<std::uint64_t>(std::max<std::int64_t>(rt_ms, 0));
  add_second(metric_event::success, now_ms, n);
  add_second(metric_event::rt, now_ms, rt);
  const auto w = second_.window_of(now_ms);
  cell_min(second_.bucket(w).min_rt, cell_tag(w), rt);
}

void statistic_node::add_occupied_pass(std::int64_t now_ms, std::uint32_t n) noexcept {
  const auto mw = minute_.window_of(now_ms);
  auto& b = minute_.bucket(mw);
  b.add(metric_event::occupied_pass, cell_tag(mw), n);
  b.add(metric_event::pass, cell_tag(mw), n);
}

void statistic_node::add_waiting(std::int64_t future_ms, std::uint32_t n) noexcept {
  const auto w = borrow_.window_of(future_ms);
  cell_add(borrow_.bucket(w).pass, cell_tag(w), n);
}

std::uint64_t statistic_node::borrowed(std::int64_t window) const noexcept {
  return cell_value(borrow_.bucket(window).pass.load(std::memory_order_relaxed), cell_tag(window));
}

std::uint64_t statistic_node::window_sum(metric_event e, std::int64_t now_ms) const noexcept {
  std::uint64_t sum = 0;
  second_.for_each_window(now_ms, [&](const second_bucket& b, std::uint64_t tag, std::int64_t w) {
    sum += b.value(e, tag);
    if (e == metric_event::pass) {
      sum += borrowed(w);
    }
  });
  return sum;
}

std::uint64_t statistic_node::window_pass_at(std::int64_t window_start_ms,
                                             std::int64_t now_ms) const noexcept {
  if (window_start_ms < 0) {
    return 0;
  }
  const auto w = second_.window_of(window_start_ms);
  const auto cur = second_.window_of(now_ms);
  if (w > cur || w <= cur - second_.sample_count()) {
    return 0;
  }
  return second_.bucket(w).value(metric_event::pass, cell_tag(w)) + borrowed(w);
}

std::uint64_t statistic_node::waiting(std::int64_t now_ms) const noexcept {
  // Future windows up to one interval ahead (Sentinel's FutureBucketLeapArray holds that many).
  std::uint64_t sum = 0;
  const auto cur = second_.window_of(now_ms);
  for (std::int64_t w = cur + 1; w <= cur + second_.sample_count(); ++w) {
    sum += borrowed(w);
  }
  return sum;
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
  return static_cast<double>(window_sum(metric_event::exception, now_ms)) /
         second_.interval_sec();
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
  second_.for_each_window(now_ms, [&](const second_bucket& b, std::uint64_t tag, std::int64_t) {
    const auto word = b.min_rt.load(std::memory_order_relaxed);
    if (word != 0 && (word >> cell_value_bits) == tag) {
      rt = std::min(rt, word & cell_value_mask);
    }
  });
  return static_cast<double>(std::max<std::uint64_t>(1, rt));
}

double statistic_node::max_success_qps(std::int64_t now_ms) const noexcept {
  std::uint64_t best = 1;
  second_.for_each_window(now_ms, [&](const second_bucket& b, std::uint64_t tag, std::int64_t) {
    best = std::max(best, b.value(metric_event::success, tag));
  });
  return static_cast<double>(best) * second_.sample_count() / second_.interval_sec();
}

std::uint64_t statistic_node::seconds_sum(metric_event e, std::int64_t now_ms,
                                          std::int64_t first_second,
                                          std::int64_t last_second) const noexcept {
  const auto idx = static_cast<std::size_t>(e);
  const int n = second_.sample_count();
  const auto now_window = second_.window_of(now_ms);
  constexpr int max_attempts = 4;
  std::uint64_t total = 0;
  for (int attempt = 0; attempt < max_attempts; ++attempt) {
    // Values still in the short window (not yet folded)...
    std::uint64_t tags_before = 0;
    std::uint64_t unfolded = 0;
    for (int i = 0; i < n; ++i) {
      const std::uint64_t word = second_.bucket(i).cells[idx].load(std::memory_order_acquire);
      tags_before = tags_before * 31 + (word >> cell_value_bits);
      if (word == 0) {
        continue;
      }
      const auto age = static_cast<std::int64_t>(
          (cell_tag(now_window) - (word >> cell_value_bits)) & cell_tag_mask);
      if (age > static_cast<std::int64_t>(cell_tag_mask >> 1)) {
        continue;  // a window after `now_ms`
      }
      const std::int64_t second = (now_window - age) * second_.window_ms() / 1000;
      if (second >= first_second && second <= last_second) {
        unfolded += word & cell_value_mask;
      }
    }
    // ...plus what was folded into the minute buckets.
    std::uint64_t folded = 0;
    for (std::int64_t s = std::max<std::int64_t>(first_second, 0); s <= last_second; ++s) {
      folded += minute_.bucket(s).value(e, cell_tag(s));
    }
    std::uint64_t tags_after = 0;
    for (int i = 0; i < n; ++i) {
      const std::uint64_t word = second_.bucket(i).cells[idx].load(std::memory_order_acquire);
      tags_after = tags_after * 31 + (word >> cell_value_bits);
    }
    total = unfolded + folded;
    if (tags_before == tags_after) {
      break;  // no fold happened while we read
    }
  }
  return total;
}

std::uint64_t statistic_node::minute_sum(metric_event e, std::int64_t now_ms) const noexcept {
  const std::int64_t second = minute_.window_of(now_ms);
  return seconds_sum(e, now_ms, second - minute_.sample_count() + 1, second);
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
  const auto prev = minute_.window_of(now_ms) - 1;
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
  const double max_count = threshold * second_.interval_ms() / 1000.0;
  const auto current_borrow = static_cast<double>(waiting(now_ms));
  if (current_borrow >= max_count) {
    return occupy_timeout_ms;
  }
  const std::int64_t window_ms = second_.window_ms();
  std::int64_t earliest = now_ms - now_ms % window_ms + window_ms - second_.interval_ms();
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
