// The uniform one-hop kernel of homogeneous graphs (graph/hop_kernels.h).
#include "graph/hop_kernels.h"

#include <algorithm>
#include <vector>

#include "base/random.h"
#include "graph/draws.h"

namespace partita {

// The common case (homogeneous, uniform, no replacement, no time), software-pipelined:
// the neighbour lists live in a large array and every node's list is a cache miss, so the
// nodes are handled in blocks: first the positions of a block's picks are computed and
// prefetched (and the next block's column bounds), then the block's neighbours are read,
// by which time most of them have arrived. This overlaps the misses instead of paying them
// one after another.
void sample_uniform_homogeneous_hop(const Topology& t, uint64_t key, int fanout, const HopInput& input,
                                    HopOutput& out) {
  std::vector<int64_t> picks, positions;
  const int64_t* indptr = t.csc(0).indptr.as<int64_t>().data();
  const int64_t* indices = t.csc(0).indices.as<int64_t>().data();
  const int64_t* orig = t.orig_node_ids().data();
  const int64_t node_begin = t.node_begin(), edge_begin = t.edge_begin();
  const size_t n = input.nodes.size();
  constexpr size_t kBlock = 32;
  for (size_t i = 0; i < std::min(n, kBlock); ++i) {
    __builtin_prefetch(indptr + (input.nodes[i] - node_begin));
    __builtin_prefetch(orig + (input.nodes[i] - node_begin));
  }
  for (size_t block = 0; block < n; block += kBlock) {
    const size_t block_end = std::min(n, block + kBlock);
    const int64_t emitted = static_cast<int64_t>(out.neighbors.size());
    positions.clear();
    for (size_t i = block; i < block_end; ++i) {
      if (i + kBlock < n) {
        const int64_t ahead = input.nodes[i + kBlock] - node_begin;
        __builtin_prefetch(indptr + ahead);
        __builtin_prefetch(orig + ahead);
      }
      const int64_t local = input.nodes[i] - node_begin;
      const int64_t begin = indptr[local], degree = indptr[local + 1] - begin;
      const auto room = [&](int64_t count) {  // written in place: appends were calls, not inlined
        const size_t at = positions.size();
        positions.resize(at + static_cast<size_t>(count));
        return positions.data() + at;
      };
      if (fanout < 0 || degree <= fanout) {
        int64_t* at = room(degree);
        for (int64_t k = 0; k < degree; ++k) at[k] = begin + k;
        for (int64_t pos = begin; pos < begin + degree; pos += 8) __builtin_prefetch(indices + pos);  // 8 a line
        if (degree > 0) __builtin_prefetch(indices + begin + degree - 1);
      } else {
        uint64_t node_key = mix64(key, static_cast<uint64_t>(orig[local]));
        if (!input.trees.empty()) node_key = mix64(node_key, static_cast<uint64_t>(input.trees[i]));
        Rng rng(node_key);
        choose_distinct(rng, degree, fanout, picks);
        int64_t* at = room(fanout);
        for (int64_t k = 0; k < fanout; ++k) {
          at[k] = begin + picks[k];
          __builtin_prefetch(indices + at[k]);
        }
      }
      out.offsets.push_back(emitted + static_cast<int64_t>(positions.size()));
    }
    const size_t picked = positions.size();
    out.neighbors.resize(static_cast<size_t>(emitted) + picked);
    out.edge_ids.resize(static_cast<size_t>(emitted) + picked);
    int64_t* neighbors = out.neighbors.data() + emitted;
    int64_t* edge_ids = out.edge_ids.data() + emitted;
    for (size_t j = 0; j < picked; ++j) {
      neighbors[j] = indices[positions[j]];
      edge_ids[j] = edge_begin + positions[j];
    }
  }
}

}  // namespace partita
