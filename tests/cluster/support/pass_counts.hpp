// Passes per aligned wall-clock second, from clock reads taken around each pass: what the flood
// tests of a global count (tests/cluster, tests/examples) assert.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace floodgate::cluster::testing {

/// Milliseconds of the wall clock (Redis's clock is the same machine's).
inline std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/** Passes per aligned wall-clock second. A pass is admitted at some instant between the clock
    reads taken before and after it (around an `enter`, or around an HTTP request answered 200);
    one whose two reads fall in different seconds (an entry under way at a second's edge, more
    likely under a sanitizer) belongs to either second. */
struct pass_counts {
  std::map<std::int64_t, int> definite;  ///< passes whose two reads fall in this second
  std::map<std::int64_t, int> straddling;  ///< passes between this second and the next

  void add(std::int64_t before_ms, std::int64_t after_ms) {
    const std::int64_t b = before_ms / 1000, a = after_ms / 1000;
    if (a == b) {
      ++definite[b];
    } else {
      ++straddling[b];
      long_entries += a > b + 1;
    }
  }
  void merge(const pass_counts& o) {
    for (auto [s, n] : o.definite) definite[s] += n;
    for (auto [s, n] : o.straddling) straddling[s] += n;
    long_entries += o.long_entries;
  }
  std::int64_t first() const {
    const std::int64_t d = definite.empty() ? INT64_MAX : definite.begin()->first;
    return std::min(d, straddling.empty() ? INT64_MAX : straddling.begin()->first);
  }
  std::int64_t last() const {
    const std::int64_t d = definite.empty() ? INT64_MIN : definite.rbegin()->first;
    return std::max(d, straddling.empty() ? INT64_MIN : straddling.rbegin()->first + 1);
  }
  int at(const std::map<std::int64_t, int>& m, std::int64_t s) const {
    const auto it = m.find(s);
    return it == m.end() ? 0 : it->second;
  }

  /** Whether the straddling passes can be placed so that every second holds at most `most`
      and every second from `first() + min_from` to the one before last() at least `least`:
      the contract as far as clock reads around each entry can show it. */
  bool consistent(int most, int least, int min_from) const {
    if (definite.empty() && straddling.empty()) return false;
    const std::int64_t lo = first(), hi = last();
    // reachable[x]: x straddling passes of the previous edge can be placed in this second.
    std::vector<bool> reachable{true};
    for (std::int64_t s = lo; s <= hi; ++s) {
      const int edge = at(straddling, s);  // between s and s + 1
      std::vector<bool> next(static_cast<std::size_t>(edge) + 1, false);
      const bool bounded_below = s >= lo + min_from && s < hi;
      for (std::size_t x = 0; x < reachable.size(); ++x) {
        if (!reachable[x]) continue;
        for (int k = 0; k <= edge; ++k) {  // k of this edge's passes in s, the rest in s + 1
          const int load = at(definite, s) + static_cast<int>(x) + k;
          if (load <= most && (!bounded_below || load >= least)) {
            next[static_cast<std::size_t>(edge - k)] = true;
          }
        }
      }
      reachable = std::move(next);
    }
    return reachable.size() == 1 && reachable[0];  // nothing straddles past the last second
  }

  /** The fewest passes seconds `lo`..`hi` can hold: those whose two reads fall in one of
      them, and those straddling an edge between two of them. */
  int least_within(std::int64_t lo, std::int64_t hi) const {
    int n = 0;
    for (std::int64_t s = lo; s <= hi; ++s) n += at(definite, s) + (s < hi ? at(straddling, s) : 0);
    return n;
  }

  std::string text() const {
    std::string out;
    for (std::int64_t s = first(); s <= last(); ++s) {
      out += ' ' + std::to_string(at(definite, s));
      if (const int e = at(straddling, s)) out += " (+" + std::to_string(e) + " at the edge)";
    }
    return out;
  }

  int long_entries = 0;  ///< passes whose entry spanned more than one second edge
};

}  // namespace floodgate::cluster::testing
