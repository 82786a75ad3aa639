// The entity table a knowledge-graph trainer (training/kg_trainer.h) trains, behind one
// interface whatever its storage (embeddings.storage):
//
// - memory: the table sharded over the partitions' embedding shards
//   (embeddings/sharded_embedding.h). A step trains this trainer's share of a slice of the
//   epoch's triple order and draws its negatives among every entity
//   (KgTriples::draw_negatives); the owners apply the gradients.
// - disk: the trainer's own copy of the table in partition files, at most a buffer's worth
//   in memory, swapped as the epoch's bucket walk says (embeddings/partition_buffer.h,
//   embeddings/bucket_epoch.h). A step trains a slice of its buffer state's triples and
//   draws its negatives among the resident entities, weighed back to the in-memory rate;
//   the trainer applies the gradients to the resident rows (embeddings/sparse_adagrad.h).
//
// Why one interface: the storage decides which triples a step trains, among which
// entities their negatives are drawn and how they weigh, where rows are read and where
// gradients go, and what a checkpoint keeps of the table; the step itself (the scores, the
// loss, the relations' allreduce) is the same for both, with no branch on the storage.
//
// Threads: the trainer's thread only (the disk buffer's reader is its own business).
#pragma once

#include <ATen/core/Tensor.h>
#include <caf/fwd.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "embeddings/kg_triples.h"
#include "graph/partition_book.h"
#include "training/job_config.h"

namespace torch::serialize {
class InputArchive;
class OutputArchive;
}  // namespace torch::serialize

namespace partita {

// What a storage reads of its trainer; every reference outlives the storage.
struct KgTrainerContext {
  const JobConfig& job;
  const KgTriples& triples;
  const PartitionBook& book;
  const KgNegatives& negatives;
  int trainer = 0;  // the trainer's index
  int part = 0;     // its partition
};

class KgEntities {
 public:
  // The training triples one step of this trainer trains.
  struct StepTriples {
    std::vector<int64_t> edges;      // train-split edge ids
    std::vector<int64_t> positions;  // each one's position in the step's slice, increasing:
                                     // its chunk of negatives is position / chunk_size
  };

  virtual ~KgEntities() = default;

  // Starts epoch `epoch` of `steps` steps (embeddings/kg_triples.h numbering). Throws Error
  // when the storage's epoch has fewer steps.
  virtual void begin_epoch(uint64_t epoch, int64_t steps) = 0;
  // The triples of step `step` of the epoch begun; steps come in increasing order. On disk
  // it first makes resident the buffer state that trains the step (throwing Error when a
  // read or write-back fails).
  virtual StepTriples step_triples(int64_t step) = 0;
  // The k negatives (global ids) of chunk `chunk` of step `step` of epoch `epoch`, after
  // step_triples(step).
  virtual std::vector<int64_t> draw_negatives(uint64_t epoch, int64_t step, int64_t chunk) const = 0;
  // [p, k]: the log of the rate at which positive i's chunk negatives (negatives[chunk_of[i]
  // * k, ...)) are drawn against the in-memory job's (BucketEpoch::log_rate), for a softmax
  // loss to subtract from their scores; undefined when they are drawn at that rate.
  virtual at::Tensor negative_log_rates(const std::vector<int64_t>& heads, const std::vector<int64_t>& tails,
                                        const std::vector<int64_t>& negatives,
                                        const std::vector<int64_t>& chunk_of) const = 0;
  // The rows of `ids` (sorted, unique global ids) into out[i * dim, ...): in training, as
  // the step trains them; between epochs, as the last one left them.
  virtual void read(const std::vector<int64_t>& ids, float* out) = 0;
  // Rows [first, last) of partition `part`'s global ids into out (evaluation).
  virtual void read_range(int part, int64_t first, int64_t last, float* out) = 0;
  // This trainer's step: grads[i * dim, ...) for ids[i] (sorted, unique; empty for a step
  // with none), the mean over the step's positives of every trainer.
  virtual void apply_gradients(const std::vector<int64_t>& ids, const std::vector<float>& grads) = 0;
  // Ends epoch `epoch`, trained whole: on disk the buffer is written back, so that
  // evaluation and checkpoints read the files. Throws Error when a write fails.
  virtual void end_epoch(uint64_t epoch) = 0;
  // Ends an epoch that failed midway: on disk every resident row trained so far is written
  // back and the buffer emptied, whatever fails. Returns the failures met ("" for none).
  virtual std::string settle() = 0;
  // Writes into a trainer's state what the storage keeps itself (in memory: nothing, the
  // shards hold the rows), and reads it back. Throw Error naming what does not match.
  virtual void save(torch::serialize::OutputArchive& archive) = 0;
  virtual void load(torch::serialize::InputArchive& archive) = 0;
};

// The table sharded in memory: shards[p], partition p's shard actor; run_key finds those in
// this process. Connects to the others now; throws Error naming one that cannot be reached.
std::unique_ptr<KgEntities> sharded_kg_entities(const KgTrainerContext& trainer, caf::actor_system& system,
                                                std::vector<caf::actor> shards, const std::string& run_key,
                                                std::chrono::milliseconds deadline);
// The table on disk (embeddings.dir, or the job's output folder's embeddings/), created with
// its initial values. `deadline`: every wait for the buffer's reader.
std::unique_ptr<KgEntities> disk_kg_entities(const KgTrainerContext& trainer, std::chrono::milliseconds deadline);

}  // namespace partita
