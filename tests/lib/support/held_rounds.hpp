// Racing threads that hold what they were admitted: the overlap a concurrency limit is about.
#pragma once

#include <atomic>
#include <barrier>
#include <thread>
#include <vector>

namespace floodgate::test_support {

/** Runs `rounds` rounds on `threads` threads. In each round every thread calls `try_enter(t)`
    once, all at the same time; a thread admitted (true) holds until every thread has tried, then
    calls `leave(t)`, and the next round starts once all have left. Returns how many were admitted
    in each round: with a limit of N in flight, exactly min(threads, N) every round, where a
    check-then-act race admits more and a lost release admits fewer. */
template <class TryEnter, class Leave>
std::vector<int> admitted_per_round(int threads, int rounds, TryEnter try_enter, Leave leave) {
  std::vector<int> admitted(static_cast<std::size_t>(rounds), 0);
  std::atomic<int> in_round{0};
  int round = 0;
  // The completion step runs once all threads have tried (odd phases) or left (even phases).
  bool tried_phase = true;
  std::barrier sync{threads, [&]() noexcept {
                      if (tried_phase) {
                        admitted[static_cast<std::size_t>(round)] = in_round.exchange(0);
                        ++round;
                      }
                      tried_phase = !tried_phase;
                    }};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int r = 0; r < rounds; ++r) {
        const bool in = try_enter(t);
        if (in) in_round.fetch_add(1);
        sync.arrive_and_wait();  // every thread has tried; the admitted ones still hold
        if (in) leave(t);
        sync.arrive_and_wait();  // every thread has left
      }
    });
  }
  for (auto& th : pool) th.join();
  return admitted;
}

}  // namespace floodgate::test_support
