// Synthetic graphs with a fixed seed: the same options give the same graph, bit for bit,
// whatever the thread count (work is cut into fixed chunks, each with its own random
// stream; threads only decide where a chunk runs).
//
// Invalid options throw UsageError naming the `partita generate` flag, e.g.
// "--a/--b/--c: a + b + c must be below 1". Every generated Dataset passes validate().
#pragma once

#include <cstdint>

#include "partitioner/dataset.h"

namespace partita {

// Node split shared by the generators: `num_train` nodes (or, when 0, round(train_fraction
// * n)) for training, then round(val_fraction * n) for validation and round(test_fraction
// * n) for testing, drawn without overlap from the n labelled nodes in a seeded random
// order; the rest are in no split. Fractions are of all n nodes, so they (without
// train_fraction when num_train is set) must sum to at most 1. See partitioner/splits.h.
struct SplitOptions {
  int64_t num_train = 0;
  double train_fraction = 0.1;
  double val_fraction = 0.1;
  double test_fraction = 0.2;
};

// Recursive-matrix power-law graph (Chakrabarti et al.): round(num_nodes * avg_degree)
// directed edges, each placed by recursively choosing a quadrant with probabilities a, b,
// c and d = 1 - a - b - c over ceil(log2(num_nodes)) levels. Node ids are then permuted so
// hubs are not all at small ids. Self-loops and ids >= num_nodes are redrawn; parallel
// edges are kept (as in Graph500). Needs a, b, c >= 0, a + b + c < 1 and b + c > 0.
// Undirected: round(num_nodes * avg_degree / 2) edges are drawn and each is stored in both
// directions, next to each other (2i, 2i + 1), so in-degrees follow the power law that
// out-degrees do, as in the graphs GNN benchmarks are measured on (a directed R-MAT with a
// large `a` leaves most nodes with few in-edges, so sampled batches stay small).
// Optional N(0, 1) float features, uniformly random labels and a split over all nodes, for
// benchmarks: the labels carry no signal.
struct RmatOptions {
  int64_t num_nodes = 1 << 20;
  double avg_degree = 20;  // directed edges per node, both directions counted when undirected
  double a = 0.57, b = 0.19, c = 0.19;
  bool undirected = false;
  int64_t feature_dim = 0;
  int64_t num_classes = 0;  // 0: no labels and no split
  SplitOptions split;
  uint64_t seed = 0;
  int threads = 0;  // 0 = hardware concurrency
};
Dataset generate_rmat(const RmatOptions& options);

// Stochastic block model with class-dependent Gaussian features. Classes are balanced (sizes
// differ by at most one) and randomly placed; the label of a node is its class. Each of
// round(num_nodes * avg_degree / 2) undirected pairs picks u uniformly and then, with
// probability `homophily`, v uniformly among u's classmates, else among the other classes;
// both directions are stored, next to each other. No self-loops.
//
// Features: x = mean[class] + (noise / 2) * N(0, I), with random unit-norm class means. The
// noise along any direction has std noise / 2 whatever feature_dim is, so `noise` alone sets
// the difficulty: with the defaults, a nearest-class-mean classifier gets about 0.35-0.4 of
// the nodes right from a node's own features (chance: 1/8) and about 0.8 from the mean over
// the node and its neighbours, so a GNN clearly beats an MLP.
struct SbmOptions {
  int64_t num_nodes = 100000;
  int64_t num_classes = 8;  // at least 2, and num_nodes >= 2 * num_classes
  double avg_degree = 10;   // directed edges per node
  double homophily = 0.8;
  int64_t feature_dim = 32;
  double noise = 2.0;  // 2 = per-direction noise as large as the class signal
  SplitOptions split;
  uint64_t seed = 0;
  int threads = 0;
};
Dataset generate_sbm(const SbmOptions& options);

// Heterogeneous academic graph: authors write papers, papers cite papers and are published
// in venues. Node types "paper", "author", "venue" share one id space: papers first, then
// authors, then venues. Edge types, in this order: (author, writes, paper), (paper,
// written_by, author), (paper, cites, paper), (paper, published_in, venue), (venue,
// publishes, paper); the edges are grouped by type and each reverse type mirrors its
// forward one edge by edge.
//
// A paper's label is its field (balanced, random). Venue v and author a belong to fields
// v % num_classes and a % num_classes. Each paper is published in one venue, of its own
// field with probability 0.9 (else any venue); it has authors_per_paper authors and cites
// citations_per_paper other papers on average (floor or ceil of the mean), each of its own
// field with probability `homophily`, else uniform. Papers have features as in the SBM;
// authors and venues have none, but x is [num_nodes, feature_dim] for one id space, so their
// rows are zero. y is -1 for authors and venues, and the split covers papers only.
struct HeteroOptions {
  int64_t num_papers = 20000;   // at least 2 * num_classes
  int64_t num_authors = 10000;  // at least num_classes
  int64_t num_venues = 50;      // at least num_classes
  int64_t num_classes = 5;
  int64_t feature_dim = 32;
  double citations_per_paper = 5;
  double authors_per_paper = 3;
  double homophily = 0.8;  // fraction of citations and authorships within the paper's field
  double noise = 2.0;      // paper feature noise, as in SbmOptions
  SplitOptions split;
  uint64_t seed = 0;
  int threads = 0;
};
Dataset generate_hetero(const HeteroOptions& options);

}  // namespace partita
