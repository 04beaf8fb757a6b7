#include "flow/admission_window.hpp"
#include "flow/qps_window.hpp"

#include <algorithm>
#include <cstring>

namespace floodgate::flow {

namespace {

using stat::cell_pack;
using stat::cell_tag;
using stat::cell_tag_newer;
using stat::cell_value_bits;

// The top bit of a cell's value field: set once the window is closed to bookings.
constexpr std::uint64_t seal_bit = std::uint64_t{1} << (cell_value_bits - 1);
constexpr std::uint64_t count_mask = seal_bit - 1;

constexpr std::uint64_t tag_of(std::uint64_t word) noexcept { return word >> cell_value_bits; }

constexpr bool holds(std::uint64_t word, std::uint64_t tag) noexcept {
  return word != 0 && tag_of(word) == tag;
}

// The cell holds a window later than `tag`: the window of `tag` is long gone.
constexpr bool moved_on(std::uint64_t word, std::uint64_t tag) noexcept {
  return word != 0 && tag_of(word) != tag && !cell_tag_newer(tag, tag_of(word));
}

// Time until dropping the oldest windows (values[0] first) makes room for `acquire`.
std::int64_t retry_after(const std::uint64_t* values, std::uint64_t total, std::int64_t window,
                         std::int64_t now_ms, std::uint32_t acquire, double count,
                         const window_shape& s) noexcept {
  for (int k = 0; k < s.sample_count; ++k) {
    total -= values[k];
    if (qps_fits(total, acquire, count, s.interval_ms)) {
      // values[k] is window (window - sample_count + 1 + k); it leaves the interval sample_count
      // later.
      return std::max<std::int64_t>(1, (window + 1 + k) * s.window_ms - now_ms);
    }
  }
  return s.interval_ms;
}

}  // namespace

void admission_window::give_back(std::uint64_t old, std::int64_t window) noexcept {
  if (old != 0 && (old & stat::cell_value_mask) != 0) {
    // The lease's window, from its tag: before `window` or (a clock reading ahead) after it.
    const auto back = static_cast<std::int64_t>((cell_tag(window) - tag_of(old)) & stat::cell_tag_mask);
    const std::int64_t leased =
        stat::cell_tag_ahead(tag_of(old), cell_tag(window))
            ? window + (static_cast<std::int64_t>(stat::cell_tag_mask) + 1 - back)
            : window - back;
    refund(leased, static_cast<std::uint32_t>(old & stat::cell_value_mask));
  }
}

void admission_window::renew_lease(lease_word& l, std::int64_t window, std::uint64_t extra,
                                   std::uint32_t shard) noexcept {
  const std::uint64_t tag = cell_tag(window);
  for (;;) {
    const std::uint64_t old = l.word.load(std::memory_order_relaxed);
    const std::uint64_t left = (holds(old, tag) ? old & stat::cell_value_mask : 0) + extra;
    switch (stat::store_on_cpu_unless(l.word, old, left == 0 ? 0 : cell_pack(tag, left), shard,
                                      l.revoked)) {
      case stat::cpu_store::done:
        if (!holds(old, tag)) {
          give_back(old, window);
        }
        return;
      case stat::cpu_store::changed:
        continue;
      case stat::cpu_store::moved:
      case stat::cpu_store::guarded:
        // Another CPU's thread now, or the lease is being taken back: no lease this time.
        if (extra != 0) {
          refund(window, static_cast<std::uint32_t>(extra));
        }
        return;
    }
  }
}

std::uint64_t admission_window::refusal_key(std::int64_t now_ms, std::uint32_t acquire,
                                            double count, std::uint64_t refunds) noexcept {
  std::uint64_t count_bits = 0;
  static_assert(sizeof count_bits == sizeof count);
  std::memcpy(&count_bits, &count, sizeof count);
  // SplitMix64's finaliser over each value in turn.
  const auto mix = [](std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  // Two rounds over odd multiples of the four values: a refused flood computes this per request.
  std::uint64_t h = mix(static_cast<std::uint64_t>(now_ms) * 0x9e3779b97f4a7c15ULL ^ count_bits);
  h = mix(h ^ (refunds * 0xd1b54a32d192ed03ULL + acquire));
  return h | 1;
}

bool admission_window::reclaim_idle_leases(std::int64_t window, std::int64_t now_ms,
                                           std::uint32_t own) noexcept {
  bool reclaimed = false;
  for (std::uint32_t i = 1, n = stat::shard_count(); i < n; ++i) {
    lease_word* lp = leases_.get(i);
    if (lp == nullptr || i == own) {
      continue;  // that shard never booked (it holds no lease), or it is ours
    }
    lease_word& l = *lp;
    std::uint32_t free = 0;
    if ((l.word.load(std::memory_order_relaxed) & stat::cell_value_mask) != 0 &&
        now_ms - l.leased_ms.load(std::memory_order_relaxed) >= lease_period_ms &&
        l.revoked.compare_exchange_strong(free, 1, std::memory_order_acq_rel)) {
      // Once every store on a CPU under way has restarted, none can write the lease until the
      // guard is cleared: what it holds now is final, and is given back.
      if (stat::restart_cpu_sequences()) {
        const std::uint64_t old = l.word.exchange(0, std::memory_order_acq_rel);
        if ((old & stat::cell_value_mask) != 0) {
          give_back(old, window);
          reclaimed = true;
        }
      }
      l.revoked.store(0, std::memory_order_release);
    }
  }
  return reclaimed;
}

void admission_window::seed(const stat::statistic_node& node, std::int64_t now_ms,
                            const window_shape& shape) noexcept {
  if (now_ms < 0 || !supports(shape)) {
    return;
  }
  const std::int64_t current = shape.window_of(now_ms);
  // The passes of the buckets still in the window, and those prioritized entries borrowed into
  // the coming ones (they are owed a place there: a new rule must not give it away again).
  for (std::int64_t w = std::max<std::int64_t>(0, current - shape.sample_count + 1);
       w <= current + shape.sample_count; ++w) {
    const std::int64_t start = w * shape.window_ms;
    const std::uint64_t passes = std::min<std::uint64_t>(
        w <= current ? node.window_pass_at(start, now_ms) : node.waiting_at(start, now_ms),
        count_mask);
    cell(w).store(passes == 0 ? 0 : cell_pack(cell_tag(w), passes), std::memory_order_relaxed);
  }
}

std::int64_t admission_window::seal(std::int64_t window) noexcept {
  if (window < 0) {
    return 0;
  }
  auto& c = cell(window);
  const std::uint64_t tag = cell_tag(window);
  std::uint64_t cur = c.load(std::memory_order_acquire);
  for (;;) {
    std::uint64_t next;
    if (holds(cur, tag)) {
      if ((cur & seal_bit) != 0) {
        return static_cast<std::int64_t>(cur & count_mask);
      }
      next = cur | seal_bit;
    } else if (moved_on(cur, tag)) {
      return -1;
    } else {
      next = cell_pack(tag, seal_bit);  // nothing booked: closed at zero
    }
    if (c.compare_exchange_weak(cur, next, std::memory_order_acq_rel, std::memory_order_acquire)) {
      return static_cast<std::int64_t>(next & count_mask);
    }
  }
}

admission_window::admission admission_window::admit_once(std::int64_t now_ms,
                                                         std::uint32_t acquire, double count,
                                                         const window_shape& s,
                                                         bool may_reclaim) noexcept {
  const std::int64_t w = s.window_of(std::max<std::int64_t>(now_ms, 0));
  const stat::writer_shard ws = stat::this_thread_shard();
  bool leasing = false;  // this CPU holds a lease word and the interval is one second
  lease_word* own = ws.exclusive && stat::cpu_sequence_restart_available()
                        ? leases_.create(ws.index, 1)
                        : nullptr;
  const std::uint64_t refunds = refunds_.load(std::memory_order_acquire);
  const std::uint64_t key = own != nullptr ? refusal_key(now_ms, acquire, count, refunds) : 0;
  if (own != nullptr) {
    if (own->refused_key.load(std::memory_order_relaxed) == key) {
      const std::uint64_t r = own->refused_retry.load(std::memory_order_relaxed);
      if ((r >> 32) == (key & 0xffffffff)) {
        // Refused this millisecond, nothing given back since.
        return {false, w, static_cast<std::int64_t>(r & 0xffffffff)};
      }
    }
    if (s.interval_ms == 1000) {
      leasing = true;
      if (take_from_lease(*own, w, acquire, ws.index)) {
        return {true, w, 0};
      }
    }
  }
  std::uint64_t values[max_sample_count];
  std::uint64_t earlier = 0;
  for (int k = 0; k + 1 < s.sample_count; ++k) {
    const std::int64_t v = seal(w - s.sample_count + 1 + k);
    if (v < 0) {
      return {false, w, 1};  // this clock reading is a whole ring behind: retry at once
    }
    values[k] = static_cast<std::uint64_t>(v);
    earlier += values[k];
  }
  auto& c = cell(w);
  const std::uint64_t tag = cell_tag(w);
  std::uint64_t cur = c.load(std::memory_order_acquire);
  for (;;) {
    std::uint64_t booked_now = 0;
    bool closed = false;
    if (holds(cur, tag)) {
      booked_now = cur & count_mask;
      closed = (cur & seal_bit) != 0;
    } else if (moved_on(cur, tag)) {
      return {false, w, 1};
    }
    if (closed || !qps_fits(earlier + booked_now, acquire, count, s.interval_ms)) {
      values[s.sample_count - 1] = booked_now;
      if (may_reclaim && s.interval_ms == 1000 && reclaim_idle_leases(w, now_ms, ws.index)) {
        return admit_once(now_ms, acquire, count, s, false);  // the window has room again
      }
      const std::int64_t retry =
          retry_after(values, earlier + booked_now, w, now_ms, acquire, count, s);
      if (own != nullptr) {
        const auto stamped = static_cast<std::uint64_t>(std::clamp<std::int64_t>(retry, 0, 0xffffffff));
        own->refused_retry.store((key & 0xffffffff) << 32 | stamped, std::memory_order_relaxed);
        own->refused_key.store(key, std::memory_order_relaxed);
      }
      return {false, w, retry};
    }
    // Book ahead for this thread while the window is far from full (see Leases).
    std::uint64_t extra = 0;
    if (leasing) {
      const auto limit = static_cast<double>(earlier + booked_now + acquire);
      const double room = count - limit;
      if (room >= 1) {
        extra = std::min<std::uint64_t>(
            max_lease, static_cast<std::uint64_t>(room) / (4 * stat::shard_count()));
      }
    }
    if (c.compare_exchange_weak(cur, cell_pack(tag, booked_now + acquire + extra),
                                std::memory_order_acq_rel, std::memory_order_acquire)) {
      if (leasing) {
        renew_lease(*own, w, extra, ws.index);
        if (extra != 0) {
          own->leased_ms.store(now_ms, std::memory_order_relaxed);
        }
      }
      return {true, w, 0};
    }
  }
}

admission_window::occupation admission_window::occupy_next(std::int64_t now_ms,
                                                           std::uint32_t acquire, double count,
                                                           std::int64_t occupy_timeout_ms,
                                                           const window_shape& s) noexcept {
  const std::int64_t now_window = s.window_of(std::max<std::int64_t>(now_ms, 0));
  for (int idx = 0; idx < s.sample_count; ++idx) {
    const std::int64_t f = now_window + 1 + idx;
    const std::int64_t start = f * s.window_ms;
    if (start - now_ms >= occupy_timeout_ms) {
      break;
    }
    // A cheap estimate first, so windows are sealed only for a booking that is likely to fit.
    std::uint64_t estimate = 0;
    for (std::int64_t u = f - s.sample_count + 1; u <= f; ++u) {
      estimate += u >= 0 ? booked(u) : 0;
    }
    if (!qps_fits(estimate, acquire, count, s.interval_ms)) {
      continue;
    }
    std::uint64_t earlier = 0;
    for (std::int64_t u = f - s.sample_count + 1; u < f; ++u) {
      const std::int64_t v = seal(u);
      if (v < 0) {
        return {};
      }
      earlier += static_cast<std::uint64_t>(v);
    }
    auto& c = cell(f);
    const std::uint64_t tag = cell_tag(f);
    std::uint64_t cur = c.load(std::memory_order_acquire);
    for (;;) {
      std::uint64_t booked_then = 0;
      if (holds(cur, tag)) {
        if ((cur & seal_bit) != 0) {
          break;  // another borrower reached further: try a later window
        }
        booked_then = cur & count_mask;
      } else if (moved_on(cur, tag)) {
        return {};
      }
      if (!qps_fits(earlier + booked_then, acquire, count, s.interval_ms)) {
        break;
      }
      if (c.compare_exchange_weak(cur, cell_pack(tag, booked_then + acquire),
                                  std::memory_order_acq_rel, std::memory_order_acquire)) {
        return {true, f, start};
      }
    }
  }
  return {};
}

void admission_window::refund(std::int64_t window, std::uint32_t acquire) noexcept {
  if (window < 0) {
    return;
  }
  auto& c = cell(window);
  const std::uint64_t tag = cell_tag(window);
  std::uint64_t cur = c.load(std::memory_order_acquire);
  // Lowering a sealed cell is safe: whoever read it as final over-estimated, never under.
  while (holds(cur, tag) && (cur & count_mask) >= acquire) {
    if (c.compare_exchange_weak(cur, cur - acquire, std::memory_order_acq_rel,
                                std::memory_order_acquire)) {
      refunds_.fetch_add(1, std::memory_order_release);  // refusals decided before are stale
      return;
    }
  }
}

std::uint64_t admission_window::booked(std::int64_t window) const noexcept {
  if (window < 0) {
    return 0;
  }
  const std::uint64_t word = cell(window).load(std::memory_order_acquire);
  return holds(word, cell_tag(window)) ? (word & count_mask) : 0;
}

}  // namespace floodgate::flow
