#include "graph/epoch_plan.h"

#include <algorithm>

#include "base/error.h"
#include "base/random.h"

namespace partita {

EpochPlan plan_epoch(Span<const int64_t> seeds, int64_t batch_size, uint64_t job_seed,
                     uint64_t epoch, bool shuffle_seeds, bool drop_last) {
  if (batch_size < 1) throw UsageError("batch_size must be at least 1");
  EpochPlan plan;
  plan.job_seed = job_seed;
  plan.epoch = epoch;
  plan.order.assign(seeds.begin(), seeds.end());
  if (shuffle_seeds) {
    // A stream of its own, so the shuffle never correlates with any sampling draw.
    Rng rng(mix64(job_seed, epoch, 0x53485546464c45ull /* "SHUFFLE" */));
    shuffle(plan.order, rng);
  }
  const int64_t n = static_cast<int64_t>(plan.order.size());
  for (int64_t begin = 0; begin < n; begin += batch_size) {
    if (drop_last && begin + batch_size > n) break;
    plan.offsets.push_back(begin);
  }
  plan.offsets.push_back(plan.offsets.empty() ? 0 : std::min(n, plan.offsets.back() + batch_size));
  if (drop_last) plan.order.resize(plan.offsets.back());
  return plan;
}

std::pair<int64_t, int64_t> share_of(int64_t count, int64_t share, int64_t shares) {
  return {count * share / shares, count * (share + 1) / shares};
}

}  // namespace partita
