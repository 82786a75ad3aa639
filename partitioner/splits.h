// Random train/val/test node splits, as the synthetic generators (and readers of datasets
// without a published split) make them.
#pragma once

#include <cstdint>
#include <vector>

#include "partitioner/generators.h"

namespace partita {

struct NodeSplit {
  std::vector<int64_t> train;  // each sorted; the three are disjoint
  std::vector<int64_t> val;
  std::vector<int64_t> test;
};

// Throws UsageError (naming the flag) unless `options` can split `num_candidates` nodes:
// fractions in [0, 1] summing to at most 1, and num_train + val + test nodes fitting.
void check_split_options(const SplitOptions& options, int64_t num_candidates);

// Draws the split from `candidates` (distinct node ids, any order): the first num_train (or
// round(train_fraction * n)) of a seeded random order for training, the next
// round(val_fraction * n) for validation, the next round(test_fraction * n) for testing.
// The rest are in no split. The result depends only on the candidates, options and seed.
NodeSplit random_node_split(std::vector<int64_t> candidates, const SplitOptions& options,
                            uint64_t seed);

// The split of nodes 0..num_candidates-1 (the generators' labelled nodes come first),
// stored into d's train_idx, val_idx and test_idx.
void assign_random_split(Dataset& d, int64_t num_candidates, const SplitOptions& options,
                         uint64_t seed);

// Link prediction's held-out edges (as PyG's RandomLinkSplit, done before partitioning so
// that the graph the job trains on does not contain them): moves round(val_fraction * U)
// and round(test_fraction * U) of d's U links out of d.edges into d.val_edges and
// d.test_edges, each link once, as its first edge in d's order. A link is every edge
// between the same two nodes of one type or of its reverse type (d.reverse_edge_type): an
// edge and its reverse, as undirected graphs store both directions, a MovieLens rating as
// `rates` and as `rated_by`, and parallel edges; so no held-out pair is left in the graph
// in either direction. With `edge_type` >= 0 (link prediction on one edge type), only the
// links of that type (or its reverse) are drawn, and each is held out as an edge of
// `edge_type` itself (its ends swapped when its first edge is the reverse). Links are drawn
// with `seed` in a random order, or, by_time (a time split: train on the past, predict the
// future), the latest links by edge time (a link's time is its first edge's) are the test
// links and the ones before them the validation links, ties by edge order; what stays
// keeps its order, types, times and attributes, and a held-out link keeps its first edge's
// attributes in d.val_edge_attr or d.test_edge_attr. Throws UsageError naming data.holdout when
// the fractions are not in [0, 1] or sum to more than 1, when d has held-out edges already
// (its own split), by_time when d has no edge times, and model.target_edge when
// `edge_type` is not one of d's edge types. Held-out edges keep their first edge's time in
// d.val_edge_time or d.test_edge_time when d has edge times.
//
// HeldOut::kKeepAsHistory (by_time only: a streaming time split, as TGN and TGB evaluate
// temporal graphs) moves nothing: every edge stays in d.edges with its time, the held-out
// links are also listed in d.val_edges and d.test_edges, and d.held_out_in_graph is set.
// A job on such a graph must bound every seed's neighbourhood strictly before the seed's
// time (training/gnn_link_trainer.h), so a held-out link at time t is the answer for its own
// seed and history for every seed after t; training (all before the held-out links) sees
// none of them. Throws UsageError naming data.holdout.history without by_time.
enum class HeldOut { kLeaveGraph, kKeepAsHistory };
void hold_out_edges(Dataset& d, double val_fraction, double test_fraction, uint64_t seed, bool by_time = false,
                    int32_t edge_type = -1, HeldOut held_out = HeldOut::kLeaveGraph);

}  // namespace partita
