#include "graph/neighbor_sampler.h"

#include <utility>

#include "base/error.h"

namespace partita {

NeighborSampler::NeighborSampler(const Topology& topology, SamplerConfig config)
    : topology_(topology), config_(std::move(config)), builder_(config_.disjoint) {
  config_.order_by_time(topology_);
  config_.validate(topology_);
  if (topology_.num_nodes() != topology_.book().num_nodes()) {
    throw UsageError("the reference sampler needs the whole graph in one partition");
  }
}

MiniBatch NeighborSampler::sample(Span<const int64_t> seeds, const SampleKey& key,
                                  Span<const int64_t> seed_times) {
  if (config_.temporal != TemporalMode::kNone && seed_times.size() != seeds.size()) {
    throw UsageError("temporal sampling needs one time per seed");
  }
  builder_.start(seeds, seed_times);
  for (int hop = 0; hop < config_.num_hops(); ++hop) {
    HopInput input{builder_.frontier_nodes(), builder_.frontier_trees(), builder_.frontier_times()};
    sample_hop(topology_, config_, key, hop, input, hop_);
    builder_.add_hop(hop_);
  }
  return builder_.finish();
}

}  // namespace partita
