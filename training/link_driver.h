// The driver of a link-prediction job (task: link_prediction): spawns an embedding shard per
// partition (training/embedding_shard.h), an allreduce member and a kg_trainer per trainer
// (training/kg_trainer.h), each with its partition, and steers the epochs: training steps
// with a progress line, then filtered and raw ranking on the valid and test triples, a
// checkpoint (the relations and every shard's rows) and a metrics line per epoch. run_job
// hands such jobs here; everything the node-classification driver promises about OUTPUT,
// resuming, cancelling and lost daemons holds here too.
//
// metrics.jsonl per epoch: epoch, steps, seconds, edges_per_second (positives with their
// negatives), train_loss, and per split (valid, test) mrr, hits@1, hits@3, hits@10 filtered
// and raw_mrr, raw_hits@10 ...
#pragma once

#include "runtime/runtime.h"
#include "training/job_driver.h"

namespace partita {

JobReport run_link_prediction_job(runtime::Runtime& runtime, const JobConfig& job, const RunOptions& options);

}  // namespace partita
