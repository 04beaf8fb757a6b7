// The q-quantile of a sample, for the benchmarks that report spreads (paired_slices.cpp,
// cold_entry.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace floodgate::bench {

/// The value at rank q * (n - 1), rounded to the nearest rank; 0 for an empty sample.
inline double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

}  // namespace floodgate::bench
