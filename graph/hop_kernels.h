// The fast one-hop kernels behind sample_hop (graph/hop_sampler.h), one file each, as
// GAPBS keeps its kernels: uniform sampling of homogeneous graphs (uniform_hop.cpp), of
// heterogeneous ones (hetero_hop.cpp), and temporal sampling (temporal_hop.cpp). Each is
// software-pipelined over blocks of nodes, and its speed depends on what the compiler
// inlines into it: in one file, growing one kernel made the compiler stop inlining a
// vector append or the draws into another (perf: the uniform kernel a fifth slower, the
// heterogeneous one a sixth), so each has its own. Their draws are the general path's
// (graph/draws.h), so every kernel gives the batches sample_hop documents.
//
// Contract of each: `hop_key` is the batch's key mixed with the hop; every input node is
// `topology`'s (sample_hop checks); `out` is cleared by the caller and appended to.
#pragma once

#include <cstdint>

#include "graph/hop_sampler.h"
#include "graph/topology.h"

namespace partita {

// Homogeneous `topology`, no weights, no replacement, no time; `fanout` -1 takes all.
void sample_uniform_homogeneous_hop(const Topology& topology, uint64_t hop_key, int fanout, const HopInput& input,
                                    HopOutput& out);

// Heterogeneous `topology`, no weights, no replacement, no time: each of a node's type runs
// (Topology::type_runs) sampled with its edge type's fanout at `hop`.
void sample_uniform_hetero_hop(const Topology& topology, const SamplerConfig& config, uint64_t hop_key, int hop,
                               const HopInput& input, HopOutput& out);

// Temporal configs without weights, and `last` with them (weights do not change its
// picks): `config`'s time order ranks `topology` by config.temporal, and input.times holds
// each node's time bound.
void sample_temporal_hop(const Topology& topology, const SamplerConfig& config, uint64_t hop_key, int hop,
                         const HopInput& input, HopOutput& out);

}  // namespace partita
