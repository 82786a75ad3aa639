// One epoch of a knowledge-graph job whose entity table lives on disk behind a partition
// buffer: which training triples each buffer state trains, in which steps, against which
// negatives. Torch-free: ids and draws only, computed alike by the trainer (to train) and
// the driver (to know the epoch's steps).
//
// Rows: an entity's row in the table (table_ids) is its original id's place in a
// permutation keyed by the job seed, so a partition is a random set of entities, as
// Marius's preprocessing makes it. Original ids in order of appearance put the hubs
// together: on FB15k-237 with 8 partitions, range partitions gave edge buckets of 341 to
// 27,009 triples, the permutation 3,263 to 5,895.
//
// The walk: BETA's order (training/bucket_order.h) over the table's p partitions, its
// partitions renamed by a permutation keyed by (seed, epoch) so that no partition always
// trains first, as Marius does. Each training triple goes to one of the states that hold
// both its ends, drawn per triple and epoch (keyed by (seed, epoch)), not always to the
// first: as Marius's random assignment of edge buckets to states, it spreads the first
// state's 16 buckets (a quarter of the triples with p = 8, c = 4) over the epoch and mixes
// each state's steps. A state trains its triples in the epoch's training order
// (KgTriples::epoch_order filtered), in steps of B triples; a state's last step may be
// short, since the next state no longer holds all the partitions it would need.
//
// Negatives: a step's chunk draws its k negatives as KgTriples::draw_negatives does, with
// the same keyed generator and the same sequence of draws, but among the resident
// entities: the degree-based share from the ends of the state's own triples (as the
// positives it trains are distributed), the uniform share by the in-memory draw, drawn
// again while it falls outside the buffer. With c == p there is one state holding every
// entity and every triple, and the draws, the steps and the losses are those of the
// in-memory job (tests/training/partition_buffer_job_test.cpp).
//
// Measured on FB15k-237 DistMult (BENCHMARKS.md, "Knowledge-graph embeddings on disk"),
// test MRR at epoch 4 with a buffer of 4 of 8 partitions: 0.2575 with range partitions and
// each triple in its first state, 0.2748 with both changes, 0.2836 in memory.
#pragma once

#include <cstdint>
#include <vector>

#include "training/bucket_order.h"
#include "training/embedding_partitions.h"
#include "training/kg_triples.h"

namespace partita {

struct BucketEpoch {
  BucketOrder order;
  // Per state: the original edge ids it trains, in training order.
  std::vector<std::vector<int64_t>> edges;
  // Per state: the epoch's index of its first step; first_step.back() == steps.
  std::vector<int64_t> first_step;
  int64_t steps = 0;

  // The state that trains epoch step `step`.
  size_t state_of_step(int64_t step) const;
};

// The table row of each global id: its original id's place in the permutation keyed by
// `seed` (see above).
std::vector<int64_t> table_ids(const KgTriples& triples, uint64_t seed);
// The original id of each table row (the inverse of table_ids, through the original ids):
// the keys of the rows' initial values (EmbeddingPartitions::create).
std::vector<int64_t> original_ids_of_rows(const KgTriples& triples, const std::vector<int64_t>& table_id);

// Plans epoch `epoch` (training/kg_triples.h numbering) over `shape` with a buffer of
// `capacity` partitions and steps of `batch_size` triples. `table_id`: table_ids(triples, seed).
// Throws UsageError for a bad shape or capacity (training/bucket_order.h).
BucketEpoch plan_bucket_epoch(const KgTriples& triples, const std::vector<int64_t>& table_id,
                              const EmbeddingPartitions::Shape& shape, int capacity, uint64_t seed, uint64_t epoch,
                              int64_t batch_size);

// The k negatives (global ids) of chunk `chunk` of step `step`, trained in state `state`
// of `plan`; `edges`: the state's own edges (plan.edges[state]), sorted (see above);
// `table_id`: table_ids(triples, seed).
std::vector<int64_t> draw_buffer_negatives(const KgTriples& triples, const KgNegatives& negatives,
                                           const BucketEpoch& plan, size_t state, const std::vector<int64_t>& edges,
                                           const std::vector<int64_t>& table_id,
                                           const EmbeddingPartitions::Shape& shape, uint64_t seed, uint64_t epoch,
                                           uint64_t step, uint64_t chunk);

// Triples per bucket, [p * p] row-major by (head partition, tail partition): for the log.
std::vector<int64_t> bucket_sizes(const KgTriples& triples, const std::vector<int64_t>& table_id,
                                  const EmbeddingPartitions::Shape& shape);

}  // namespace partita
