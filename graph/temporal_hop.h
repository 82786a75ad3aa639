// The temporal one-hop kernel: sample_hop's (graph/hop_sampler.h) for temporal configs
// without weights, and for `last` with them. Its own file, as each kernel of GAPBS is: the
// kernel is a few hundred lines of software pipelining whose speed depends on what the
// compiler inlines, and beside the other kernels in one file the compiler's per-file
// inlining budget ran out for the uniform kernel's vector appends (perf: a fifth slower).
#pragma once

#include <cstdint>

#include "graph/hop_sampler.h"
#include "graph/topology.h"

namespace partita {

// Samples `input` (each node with its time bound, input.times) into `out` as sample_hop
// does, keyed by `hop_key` (the batch's key mixed with the hop). Requires: `config`'s time
// order ranks `topology` by config.temporal; input.times.size() == input.nodes.size();
// every node is `topology`'s; weights only with `last` (they do not change its picks).
void sample_temporal_hop(const Topology& topology, const SamplerConfig& config, uint64_t hop_key, int hop,
                         const HopInput& input, HopOutput& out);

}  // namespace partita
