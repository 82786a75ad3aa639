// The one statistic every benchmark reports: the median of its rounds (one run can be off
// by 2x on a shared machine; the median of interleaved rounds is what BENCHMARKS.md quotes).
#pragma once

#include <algorithm>
#include <vector>

namespace partita::bench {

// The median of `values` (the mean of the two middle ones for an even count); 0 for none.
inline double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace partita::bench
