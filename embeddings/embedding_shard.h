// A learnable embedding table sharded like the graph: partition p's shard holds the rows of
// the entities p owns (global ids [book[p], book[p+1])) with their optimiser state, and no
// process holds the whole table (DGL's DistEmbedding, Marius's partition buffer). A trainer
// reads the rows its batch needs from their owners and sends the rows' gradients back; the
// owner sums the trainers' gradients and applies them with the job's row optimiser
// (embeddings/row_optimizer.h: sparse Adagrad, or SparseAdam with the shard's step count).
//
// Steps, and why the job is deterministic: every trainer pushes to every shard once per
// step (an empty push when it touched none of the shard's rows). A shard applies a step once
// all trainers pushed it, summing their gradients in trainer order; a trainer's read waits
// until every step it pushed has been applied. So a step's reads see exactly the previous
// steps' updates, whatever the timing, and at most one step is pending per shard.
//
// Access: a trainer in the shard's process calls it directly (find_local_shard); one in
// another process sends requests over the transport's request channel
// (runtime/transport/request_channel.h), whose session the shard's actor offers. The
// frames (runtime/transport/wire_format.h, section 5) are a head of a few fixed-width
// fields and raw ids, rows and gradients; shard_wire::answer (below) parses and answers them.
//
// Initial values are keyed by original node id, N(0, init_std) per element, so the table
// does not depend on how the graph was partitioned.
//
// No libtorch, as nothing in embeddings/: the shard's request parser (shard_wire::answer)
// and checkpoint loader (load) face bytes from other processes and files, so they are
// fuzzed (fuzz/fuzz_shard_request.cpp, fuzz/fuzz_shard_checkpoint.cpp) and their tests run
// under ASan and UBSan.
#pragma once

#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "base/span.h"
#include "embeddings/row_optimizer.h"
#include "runtime/host.h"
#include "runtime/transport/request_channel.h"
#include "runtime/transport/wire_format.h"

namespace partita {

// What a call on a stopped shard throws (stop(), below): the shard's job ended, done,
// cancelled or failed elsewhere, so a trainer logs it as the end of its epoch, not as a
// failure of its own.
class EmbeddingShardStopped : public Error {
 public:
  using Error::Error;
};

struct EmbeddingShardConfig {
  int part = 0;
  int64_t begin = 0, end = 0;  // the global ids this shard owns
  int64_t dim = 0;
  int num_trainers = 1;  // pushes per step
  uint64_t seed = 0;
  double init_std = 1e-3;
  RowOptimizer optimizer;
};

class EmbeddingShard {
 public:
  // original_ids: the original node id of each owned row (a part's orig_ids), for the
  // initial values. Throws UsageError for a bad config.
  EmbeddingShard(EmbeddingShardConfig config, Span<const int64_t> original_ids);

  const EmbeddingShardConfig& config() const { return config_; }

  // Copies the rows of `ids` (global ids this shard owns) to out[i * dim, ...), once every
  // step `trainer` pushed is applied. Throws Error naming the shard and the id for an id it
  // does not own, and when the wait exceeds `deadline` (a trainer did not push).
  void read(int trainer, Span<const int64_t> ids, float* out, std::chrono::milliseconds deadline);
  // Rows [first, last) of the shard's own ids (global ids), once no step is pending.
  void read_range(int64_t first, int64_t last, float* out, std::chrono::milliseconds deadline);
  // Trainer `trainer`'s gradients of its next step: grads[i * dim, ...) for ids[i] (unique,
  // owned; may be empty). Applies the step when it is the last trainer's push. Throws Error
  // naming the problem (an id not owned, a duplicate, a trainer pushing twice) before
  // changing anything.
  void push(int trainer, Span<const int64_t> ids, Span<const float> grads);
  // Overwrites the rows of `ids` (owned, unique) with values[i * dim, ...): for a table that
  // is computed, not learnt (a GNN encoder's output per entity, written by the trainers
  // before ranking against every entity: training/gnn_link_trainer.h). Throws Error naming the
  // shard for an id it does not own, a duplicate, or a step pending, before changing anything.
  void write(Span<const int64_t> ids, Span<const float> values);

  // The table, its optimiser state and the optimiser's step count, once no step is
  // pending: for checkpoints. load() checks the bytes (envelope, checksum, this shard's ids,
  // dim and optimiser) and resets the trainers' step counters (a resumed job's trainers
  // start counting afresh; the optimiser's count goes on). Throws Error naming the problem.
  std::vector<char> save(std::chrono::milliseconds deadline);
  void load(const std::vector<char>& bytes);

  // Wakes every wait and fails it, and every later call, with EmbeddingShardStopped: the shard's actor calls it when it exits (its job ended or failed), so that
  // no trainer waits out its deadline for a step that will never be applied.
  void stop();

 private:
  int64_t row_of(int64_t id) const;
  // Throws Error unless `values` is dim floats per id (`values_name`: what they are), every
  // id is this shard's and none repeats (`repeated`: what a repeat is called).
  void check_rows(Span<const int64_t> ids, size_t values, const char* values_name, const char* repeated) const;
  void apply_pending();  // under mutex_
  bool settled() const;  // under mutex_: no step pending
  void check_running() const;  // under mutex_: throws once stopped

  EmbeddingShardConfig config_;
  std::mutex mutex_;
  std::condition_variable applied_cv_;
  std::vector<float> table_, state_;  // state_: optimizer.state_slots() x table_'s size
  std::vector<uint64_t> pushed_;  // steps pushed, per trainer
  uint64_t applied_ = 0;          // steps applied since the start or the last load()
  uint64_t optimizer_steps_ = 0;  // steps applied to the table over the job (SparseAdam's t)
  bool stopped_ = false;
  // The pending step's gradients per trainer (at most one step is pending).
  std::vector<std::vector<int64_t>> pending_ids_;
  std::vector<std::vector<float>> pending_grads_;
};

// The initial value of entity `original_id`'s row: dim draws N(0, init_std) keyed by
// (seed, original id), into out[0, dim). Every storage of the table starts from these.
void initial_embedding_row(uint64_t seed, double init_std, int64_t original_id, int64_t dim, float* out);

// A key no other run in any process shares (from the job's output folder, its seed, the
// clock and a counter): the trainers of a run find the shards in their own process by it.
std::string new_shard_run_key(const std::string& output, uint64_t seed);

// A shard in this process, by the job's run key and part; null when there is none here
// (the shard is in another process). Registered for as long as its actor lives.
std::shared_ptr<EmbeddingShard> find_local_shard(const std::string& run_key, int part);

// The shard's actor: offers request-channel sessions to trainers in other processes and
// serves checkpoints.
//   (shard_channel) -> (host, port, token, client): a session for one client
//   (shard_save) -> bytes (EmbeddingShard::save); (shard_load, bytes) -> true | error
using shard_channel_atom = caf::atom_constant<caf::atom("e_channel")>;
using shard_save_atom = caf::atom_constant<caf::atom("e_save")>;
using shard_load_atom = caf::atom_constant<caf::atom("e_load")>;
using embedding_shard_actor = caf::typed_actor<
    caf::replies_to<shard_channel_atom>::with<std::string, uint16_t, uint64_t, uint32_t>,
    caf::replies_to<shard_save_atom>::with<std::vector<char>>,
    caf::replies_to<shard_load_atom, std::vector<char>>::with<bool>>;

// Registers "embedding_shard". Settings: run (the job run's key), dir (partition folder),
// part, dim, trainers, seed, init_std, learning_rate, optimizer (adagrad or sparse_adam;
// default adagrad), host (where sessions listen; default 127.0.0.1).
void register_embedding_shard_type(runtime::ActorTypeRegistry& registry);

// The request frames of a shard's channel (runtime/transport/wire_format.h, section 5) and
// the shard's side of them.
namespace shard_wire {
using Op = runtime::wire::ShardOp;
using RequestHead = runtime::wire::ShardRequestHead;

// Answers one request frame of a trainer in another process into `reply` (a read's or a
// range's rows as the body, which reply.storage holds until `reply` is reused). A read or a
// range waits at most `wait` for the steps it must see. Never throws: a malformed frame
// (shorter than a head, of another length than its operation and count say, an unknown
// operation, a negative count or one whose reply would exceed wire::kMaxReplyBodyBytes, a
// range outside the shard) and a request the shard refuses (EmbeddingShard's errors: an id
// not its own, a trainer it does not have, ...) are answered with a refusal naming the
// problem, and the shard is left as it was.
void answer(EmbeddingShard& shard, Span<const char> request, runtime::ChannelReply& reply,
            std::chrono::milliseconds wait);
// Writes a reply refusing a request: the refused status and `why`, no body.
void refuse(const std::string& why, runtime::ChannelReply& reply);
}  // namespace shard_wire

}  // namespace partita
