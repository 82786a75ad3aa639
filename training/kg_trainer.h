// The trainer of a knowledge-graph embedding job (task: link_prediction, encoder: none):
// one replica of the relation embeddings (replicated, their gradients allreduced, dense
// Adagrad) and a client of the entity table, sharded in memory or on disk behind a
// partition buffer (training/kg_entities.h: embeddings.storage).
//
// A step (the table says which triples and negatives: embeddings/kg_triples.h in memory,
// embeddings/bucket_epoch.h on disk): read the rows of the step's heads, tails and chunk
// negatives from the table; score each positive against its chunk's negatives on both
// sides (tail and head corruption, one batched GEMM per side, models/kg_decoder.h), a
// softmax's negatives at their in-memory weight; the loss (models/kg_loss.h) summed over
// positives; backward; allreduce the relation gradients with the step's loss and positive
// count; divide by the count (the mean over the step's positives of every trainer); step
// the relations, and hand the entity rows' gradients to the table, which applies them (in
// memory their owners, on disk the trainer's buffer).
//
// Evaluation: the trainer ranks its share of the split's triples held by its partition,
// both directions, against every entity (streamed from the owners in blocks, one GEMM per
// block, models/kg_ranking.h) or against `eval.negatives` sampled entities.
#pragma once

#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <string>
#include <vector>

#include "actors/protocol.h"
#include "runtime/host.h"
#include "training/link_metrics.h"

namespace partita {

using kg_setup_atom = caf::atom_constant<caf::atom("k_setup")>;
using kg_eval_atom = caf::atom_constant<caf::atom("k_eval")>;

//   (setup, shard actors by part, its allreduce member, run key) -> true | error
//   (epoch, epoch, steps, driver): as trainer_actor (train_step with correct = 0)
//   (eval, "valid" | "test") -> the kRankingSums sums over its share of the split, as bytes
//       (training/link_metrics.h)
//   (get state) -> relations and their optimiser; (set state, bytes) -> true | error
using kg_trainer_actor = caf::typed_actor<
    caf::replies_to<kg_setup_atom, std::vector<caf::actor>, caf::actor, std::string>::with<bool>,
    caf::reacts_to<train_epoch_atom, uint64_t, int64_t, caf::actor>,
    caf::replies_to<kg_eval_atom, std::string>::with<std::vector<char>>,
    caf::replies_to<get_state_atom>::with<std::vector<char>>,
    caf::replies_to<set_state_atom, std::vector<char>>::with<bool>>;

// Registers "kg_trainer" (settings: job, the job as YAML; trainer, its index).
void register_kg_trainer_type(runtime::ActorTypeRegistry& registry);

}  // namespace partita
