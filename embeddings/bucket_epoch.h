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
// Logical and physical partitions (MariusGNN's COMET): the table's files are l = 4p
// logical partitions (fewer for a table of under 4p entities: l = p x min(4, N / p)); each
// epoch groups them at random (keyed by (seed, epoch)) into the p physical partitions the
// walk swaps, l / p logical ones each, so a buffer of c physical partitions holds c l / p
// logical ones. Why: the negatives of a triple come from the entities resident while it
// trains, and its own ends' partitions are always resident, so the entities that share a
// partition with a triple's head or tail are drawn as its negatives twice as often as the
// others (with p = 8, c = 4), and with fixed partitions the same ones every epoch; with
// regrouping that excess falls on the ends' logical partitions only (1/l of the entities
// each, not 1/p), and the entities they co-reside with change every epoch.
//
// The walk: BETA's order (embeddings/bucket_order.h) over the epoch's p physical
// partitions; a swap writes back and reads the l / p logical partitions of one physical
// one. Since the grouping is drawn anew each epoch, no partition always trains first, as
// Marius does. Each training triple goes to one of the states that hold
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
// Correcting the negatives: over the epoch's draw of its state, a triple of physical
// bucket (A, B) meets an entity of partition X as a uniform negative at `rate` times the
// in-memory rate, rate = N / |H| * sum over the holders S in H of [X in S] / N_S (N
// entities, H the states holding A and B, N_S the entities resident in S): 2 for A and B
// with p = 8, c = 4, about 2/3 for the others. A softmax loss then pushes the ends'
// partition-mates down harder than the rest, systematically; the trainer subtracts
// log(rate) from each negative's score (the sampled-softmax logQ correction), so that in
// expectation each entity weighs as a negative what it weighs in memory. The degree-based
// share gets the same correction (its residency bias is the same; its degree one is the
// in-memory job's own).
//
// Measured on FB15k-237 DistMult (BENCHMARKS.md, "Knowledge-graph embeddings on disk"),
// filtered test MRR at epoch 8 with a buffer of 4 of 8 partitions, seeds 1 and 2: in
// memory 0.2934 and 0.2927; range partitions, each triple in its first state 0.2725 (seed
// 1); shuffled rows and triples spread 0.2817 and 0.2844; with the correction and COMET's
// grouping 0.2929 and 0.2887 (the correction alone: 0.2900, seed 1).
#pragma once

#include <cstdint>
#include <vector>

#include "embeddings/bucket_order.h"
#include "embeddings/embedding_partitions.h"
#include "embeddings/kg_triples.h"

namespace partita {

// The logical partitions per physical one: 4, or fewer when the table has under 4
// entities per physical partition (see above).
constexpr int kLogicalPerPhysical = 4;

// The table of a job with `partitions` physical partitions: its files, the logical
// partitions. Throws UsageError (embeddings.partitions) for more partitions than entities.
EmbeddingPartitions::Shape buffer_table_shape(int64_t num_entities, int partitions, int64_t dim);

struct BucketEpoch {
  // The walk over the physical partitions (states of physical partitions).
  BucketOrder order;
  // Per logical partition: the physical partition it belongs to this epoch.
  std::vector<int> group_of;
  // Per state: the logical partitions resident, sorted (the union of its physical ones).
  std::vector<std::vector<int>> resident;
  // The negatives' sampling rate against the in-memory job's, as a log, per (physical
  // bucket of the positive, physical partition of the negative): [p * p * p], row-major
  // (head's, tail's, negative's partition); empty when one state holds everything (c == p).
  // See "Correcting the negatives" above.
  std::vector<double> log_rate;
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

// Plans epoch `epoch` (embeddings/kg_triples.h numbering) over the table `shape` (its
// logical partitions: buffer_table_shape) grouped into `partitions` physical ones, with a
// buffer of `capacity` physical partitions and steps of `batch_size` triples. `table_id`:
// table_ids(triples, seed). Throws UsageError for a bad shape or capacity
// (embeddings/bucket_order.h), Error when the logical partitions are not a multiple of the
// physical ones.
BucketEpoch plan_bucket_epoch(const KgTriples& triples, const std::vector<int64_t>& table_id,
                              const EmbeddingPartitions::Shape& shape, int partitions, int capacity, uint64_t seed,
                              uint64_t epoch, int64_t batch_size);

// The k negatives (global ids) of chunk `chunk` of step `step`, trained in state `state`
// of `plan`; `edges`: the state's own edges (plan.edges[state]), sorted (see above);
// `table_id`: table_ids(triples, seed).
std::vector<int64_t> draw_buffer_negatives(const KgTriples& triples, const KgNegatives& negatives,
                                           const BucketEpoch& plan, size_t state, const std::vector<int64_t>& edges,
                                           const std::vector<int64_t>& table_id,
                                           const EmbeddingPartitions::Shape& shape, uint64_t seed, uint64_t epoch,
                                           uint64_t step, uint64_t chunk);

// Triples per bucket, [l * l] row-major by (head partition, tail partition) of the table's
// (logical) partitions: for the log.
std::vector<int64_t> bucket_sizes(const KgTriples& triples, const std::vector<int64_t>& table_id,
                                  const EmbeddingPartitions::Shape& shape);

}  // namespace partita
