// The schedule of a periodic timer that keeps its phase and never fires in a burst.
#pragma once

namespace floodgate::beast::detail {

/** The tick after `last` on the grid `last + k * interval` that is later than `now`: a timer that
    fired late (the process was stopped, or the machine stalled) skips the ticks it missed rather
    than firing them one after another at once. `interval` must be positive. */
template <class TimePoint, class Duration>
TimePoint next_tick(TimePoint last, TimePoint now, Duration interval) {
  TimePoint next = last + interval;
  if (next <= now) {
    next += ((now - next) / interval + 1) * interval;
  }
  return next;
}

}  // namespace floodgate::beast::detail
