// Synthetic graphs with a fixed seed: the same options give the same graph, bit for bit,
// whatever the thread count.
#pragma once

#include <cstdint>

#include "partitioner/dataset.h"

namespace partita {

// Node split shared by the generators: `num_train` (or, when 0, `train_fraction` of the
// labelled nodes) for training, then val/test fractions of the rest.
struct SplitOptions {
  int64_t num_train = 0;
  double train_fraction = 0.1;
  double val_fraction = 0.1;
  double test_fraction = 0.2;
};

// Recursive-matrix power-law graph (Chakrabarti et al.): num_nodes * avg_degree directed
// edges, each placed by recursively choosing a quadrant with probabilities a, b, c and
// d = 1 - a - b - c. Node ids are then permuted so hubs are not all at small ids.
// Self-loops are redrawn; parallel edges are kept (as in Graph500).
// Optional random float features, random labels and a split, for benchmarks.
struct RmatOptions {
  int64_t num_nodes = 1 << 20;
  double avg_degree = 20;
  double a = 0.57, b = 0.19, c = 0.19;
  int64_t feature_dim = 0;
  int64_t num_classes = 0;
  SplitOptions split;
  uint64_t seed = 0;
  int threads = 0;  // 0 = hardware concurrency
};
Dataset generate_rmat(const RmatOptions& options);

// Stochastic block model with class-dependent Gaussian features: a node's class is its
// block; a fraction `homophily` of edges join nodes of the same class. Features are
// class_mean + noise * N(0, 1), so a GNN (which also averages neighbours) learns the
// labels well above chance. Edges are undirected (both directions stored).
struct SbmOptions {
  int64_t num_nodes = 100000;
  int64_t num_classes = 8;
  double avg_degree = 10;  // directed edges per node
  double homophily = 0.8;
  int64_t feature_dim = 32;
  double noise = 2.0;  // feature noise scale relative to the class mean's norm
  SplitOptions split;
  uint64_t seed = 0;
  int threads = 0;
};
Dataset generate_sbm(const SbmOptions& options);

// Heterogeneous academic graph: authors write papers, papers cite papers and are published
// in venues (with reverse edge types). Papers carry features and a label (their field, which
// correlates with their venue and citations); only papers are in the split.
struct HeteroOptions {
  int64_t num_papers = 20000;
  int64_t num_authors = 10000;
  int64_t num_venues = 50;
  int64_t num_classes = 5;
  int64_t feature_dim = 32;
  double citations_per_paper = 5;
  double authors_per_paper = 3;
  SplitOptions split;
  uint64_t seed = 0;
  int threads = 0;
};
Dataset generate_hetero(const HeteroOptions& options);

}  // namespace partita
