// Waiting on a Redis connection's socket: what the plain (hiredis) and the TLS connection share.
#pragma once

#include <sys/time.h>

#include <chrono>

namespace floodgate::cluster::detail {

/// A timeout as the socket options (and hiredis) take it.
inline timeval to_timeval(std::chrono::microseconds us) noexcept {
  timeval tv{};
  tv.tv_sec = static_cast<decltype(tv.tv_sec)>(us.count() / 1'000'000);
  tv.tv_usec = static_cast<decltype(tv.tv_usec)>(us.count() % 1'000'000);
  return tv;
}

/** Waits until `fd` is ready for `events` (POLLIN, POLLOUT) or `until` passes; a signal does not
    end the wait. True when ready, or when the socket has an error the next call will report. */
bool wait_ready(int fd, short events, std::chrono::steady_clock::time_point until) noexcept;

}  // namespace floodgate::cluster::detail
