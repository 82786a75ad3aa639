// The reference multi-hop sampler: one topology that owns every node it meets (the whole
// graph in one partition), sampled hop by hop with the one-hop kernel (graph/hop_sampler.h)
// and merged by SubgraphBuilder. What PyG's NeighborLoader computes, and what every batch
// assembled across partitions must equal (graph/batch_assembly.h).
#pragma once

#include "base/span.h"
#include "graph/hop_sampler.h"
#include "graph/mini_batch.h"
#include "graph/subgraph_builder.h"
#include "graph/topology.h"

namespace partita {

class NeighborSampler {
 public:
  // Throws UsageError when the config does not fit the topology. A temporal config gets
  // its time order here unless it carries one (SamplerConfig::order_by_time).
  NeighborSampler(const Topology& topology, SamplerConfig config);

  MiniBatch sample(Span<const int64_t> seeds, const SampleKey& key,
                   Span<const int64_t> seed_times = {});

  // Hands back a batch sample() returned, once its user is done with it: the next sample()
  // reuses its memory (SubgraphBuilder::recycle). The batch it returns is the same either way.
  void recycle(MiniBatch&& used) { builder_.recycle(std::move(used)); }

 private:
  const Topology& topology_;
  SamplerConfig config_;
  SubgraphBuilder builder_;
  HopOutput hop_;
};

}  // namespace partita
