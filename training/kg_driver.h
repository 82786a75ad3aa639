// The driver of a knowledge-graph embedding job (task: link_prediction, encoder: none; a
// GNN encoder's job is run_job's, training/gnn_link_trainer.h): spawns an embedding shard per
// partition (embeddings/embedding_shard.h), an allreduce member and a kg_trainer per trainer
// (training/kg_trainer.h), each with its partition, and steers the epochs: training steps
// with a progress line, then filtered and raw ranking on the valid and test triples, a
// checkpoint (the relations and every shard's rows and Adagrad state, one file each, their
// checksums in checkpoint.json) and a metrics line per epoch. run_job hands such jobs here.
// OUTPUT, --resume and --overwrite behave as for node classification (open_job_output); a
// lost actor or daemon fails the job naming it; RunOptions::cancel stops the allreduce group
// (every trainer fails its next step) and throws JobCancelled at once, without waiting for
// the trainers to report; an exception from on_progress ends the job the same way.
//
// metrics.jsonl per epoch: epoch, steps, seconds, train_loss, train.edges_per_second
// (positives with both sides' negatives), train.positives_per_second, and on ranking epochs
// per split (valid, test): mrr, hits@1, hits@3, hits@10 (filtered), raw_mrr, raw_hits@1/3/10,
// queries, seconds.
#pragma once

#include "runtime/runtime.h"
#include "training/job_driver.h"

namespace partita {

// Runs a job with encoder: none as run_job does (training/job_driver.h); run_job calls it.
JobReport run_kg_job(runtime::Runtime& runtime, const JobConfig& job, const RunOptions& options);

}  // namespace partita
