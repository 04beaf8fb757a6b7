#include "cluster/socket_wait.hpp"

#include <poll.h>

#include <algorithm>
#include <cerrno>

namespace floodgate::cluster::detail {

bool wait_ready(int fd, short events, std::chrono::steady_clock::time_point until) noexcept {
  pollfd p{fd, events, 0};
  for (;;) {
    const auto left = until - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return false;
    // Rounded up: a wait of less than a millisecond is not a poll that returns at once.
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(ms, 60'000)));
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return true;  // the next call on the socket reports it
  }
}

}  // namespace floodgate::cluster::detail
