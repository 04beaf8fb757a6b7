#include "flow/qps_window.hpp"

#include <algorithm>

namespace floodgate::flow {

std::int64_t window_retry_after_ms(const stat::statistic_node& node, std::int64_t now_ms,
                                   std::uint32_t acquire, double limit) noexcept {
  const auto& cfg = node.config();
  const std::int64_t window_ms = cfg.second_interval_ms / cfg.second_sample_count;
  const std::int64_t w = std::max<std::int64_t>(now_ms, 0) / window_ms;
  std::uint64_t total = node.window_sum(stat::metric_event::pass, now_ms);
  for (std::int64_t u = w - cfg.second_sample_count + 1; u <= w; ++u) {
    const std::uint64_t passes = node.window_pass_at(u * window_ms, now_ms);
    total -= std::min(total, passes);
    if (qps_fits(total, acquire, limit, cfg.second_interval_ms)) {
      return std::max<std::int64_t>(1, (u + cfg.second_sample_count) * window_ms - now_ms);
    }
  }
  return cfg.second_interval_ms;
}

}  // namespace floodgate::flow
