// One epoch of a knowledge-graph job whose entity table lives on disk behind a partition
// buffer: which training triples each buffer state trains, in which steps, against which
// negatives. Torch-free: ids and draws only, computed alike by the trainer (to train) and
// the driver (to know the epoch's steps).
//
// The walk: BETA's order (training/bucket_order.h) over the table's p partitions
// (training/embedding_partitions.h: ranges of original entity ids), its partitions renamed
// by a permutation keyed by (seed, epoch) so that no partition always trains first, as
// Marius does. State k trains the triples of its buckets in the epoch's training order
// (KgTriples::epoch_order filtered), in steps of B triples; a state's last step may be
// short, since the next state no longer holds all the partitions it would need.
//
// Negatives: a step's chunk draws its k negatives as KgTriples::draw_negatives does, with
// the same keyed generator and the same sequence of draws, but among the resident
// entities: the degree-based share from the ends of the state's own triples (as the
// positives it trains are distributed; measured on FB15k-237 at epoch 4, this gave test
// MRR 0.2575 where drawing from every triple with both ends resident gave 0.2186), the
// uniform share over the resident partitions' entities. With c == p there
// is one state holding every entity and every triple, and the draws, the steps and the
// losses are those of the in-memory job (tests/training/partition_buffer_job_test.cpp).
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

// Entity ids of the table: the original node id of each global id.
std::vector<int64_t> table_ids(const KgTriples& triples);

// Plans epoch `epoch` (training/kg_triples.h numbering) over `shape` with a buffer of
// `capacity` partitions and steps of `batch_size` triples. `table_id`: table_ids(triples).
// Throws UsageError for a bad shape or capacity (training/bucket_order.h).
BucketEpoch plan_bucket_epoch(const KgTriples& triples, const std::vector<int64_t>& table_id,
                              const EmbeddingPartitions::Shape& shape, int capacity, uint64_t seed, uint64_t epoch,
                              int64_t batch_size);

// The k negatives (global ids) of chunk `chunk` of step `step`, trained in state `state`
// of `plan`; `edges`: the state's own edges (plan.edges[state]), sorted (see above).
std::vector<int64_t> draw_buffer_negatives(const KgTriples& triples, const KgNegatives& negatives,
                                           const BucketEpoch& plan, size_t state, const std::vector<int64_t>& edges,
                                           const EmbeddingPartitions::Shape& shape, uint64_t seed, uint64_t epoch,
                                           uint64_t step, uint64_t chunk);

// Triples per bucket, [p * p] row-major by (head partition, tail partition): for the log.
std::vector<int64_t> bucket_sizes(const KgTriples& triples, const std::vector<int64_t>& table_id,
                                  const EmbeddingPartitions::Shape& shape);

}  // namespace partita
