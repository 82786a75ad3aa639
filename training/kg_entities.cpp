#include "training/kg_entities.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "embeddings/bucket_epoch.h"
#include "embeddings/embedding_partitions.h"
#include "embeddings/partition_buffer.h"
#include "embeddings/sharded_embedding.h"
#include "embeddings/sparse_adagrad.h"

namespace partita {

namespace {

// In memory: the shards own the rows and apply the gradients.
class ShardedEntities final : public KgEntities {
 public:
  ShardedEntities(const KgTrainerContext& trainer, std::unique_ptr<ShardedEmbedding> table)
      : c_(trainer), table_(std::move(table)) {}

  void begin_epoch(uint64_t epoch, int64_t /*steps*/) override { order_ = c_.triples.epoch_order(c_.job.seed, epoch); }

  // This trainer's share of the epoch order's step-th slice of batch_size triples.
  StepTriples step_triples(int64_t step) override {
    const int64_t n = c_.triples.train().size();
    const int64_t batch = c_.job.batch_size;
    const int64_t begin = std::min<int64_t>(step * batch, n);
    const int64_t end = std::min<int64_t>(begin + batch, n);
    StepTriples out;
    out.positions = trainer_positions(c_.triples, c_.book, Span<const int64_t>(order_), begin, end, c_.part,
                                      c_.trainer % c_.job.trainers_per_partition, c_.job.trainers_per_partition);
    out.edges.reserve(out.positions.size());
    for (int64_t position : out.positions) out.edges.push_back(order_[static_cast<size_t>(begin + position)]);
    return out;
  }

  std::vector<int64_t> draw_negatives(uint64_t epoch, int64_t step, int64_t chunk) const override {
    return c_.triples.draw_negatives(c_.negatives, c_.job.seed, epoch, static_cast<uint64_t>(step),
                                     static_cast<uint64_t>(chunk));
  }

  at::Tensor negative_log_rates(const std::vector<int64_t>&, const std::vector<int64_t>&, const std::vector<int64_t>&,
                                const std::vector<int64_t>&) const override {
    return {};
  }

  void read(const std::vector<int64_t>& ids, float* out) override { table_->read(Span<const int64_t>(ids), out); }

  void read_range(int part, int64_t first, int64_t last, float* out) override {
    table_->read_range(part, first, last, out);
  }

  void apply_gradients(const std::vector<int64_t>& ids, const std::vector<float>& grads) override {
    // Every shard hears of every trainer's step, even with no rows of its own.
    table_->push(Span<const int64_t>(ids), Span<const float>(grads));
  }

  void end_epoch(uint64_t /*epoch*/) override {}
  std::string settle() override { return ""; }
  void save(torch::serialize::OutputArchive& /*archive*/) override {}
  void load(torch::serialize::InputArchive& /*archive*/) override {}

 private:
  KgTrainerContext c_;
  std::unique_ptr<ShardedEmbedding> table_;
  std::vector<int64_t> order_;  // the epoch's triple order
};

std::string embedding_dir(const JobConfig& job) {
  return job.link.embedding_dir.empty() ? job.output + "/embeddings" : job.link.embedding_dir;
}

// The table as of the job's last checkpoint (EmbeddingPartitions::snapshot), and its tag.
std::string snapshot_dir(const JobConfig& job) { return embedding_dir(job) + "/checkpoint"; }
std::string snapshot_tag(uint64_t epoch) { return "epoch " + std::to_string(epoch); }

// On disk: the table's files, the buffer over them, the epoch's walk, and the state the
// buffer is in; the trainer applies the gradients to the resident rows.
class DiskEntities final : public KgEntities {
 public:
  // Creates the table with its initial values, and the buffer over it.
  DiskEntities(const KgTrainerContext& trainer, std::chrono::milliseconds deadline)
      : c_(trainer), deadline_(deadline) {
    const JobConfig& job = c_.job;
    const EmbeddingPartitions::Shape shape = shape_of();
    table_id_ = table_ids(c_.triples, job.seed);
    disk_ = std::make_unique<EmbeddingPartitions>(EmbeddingPartitions::create(
        embedding_dir(job), shape, job.seed, job.link.init_std, 0.0, original_ids_of_rows(c_.triples, table_id_)));
    partitions_ = std::make_unique<PartitionBuffer>(*disk_, logical_capacity(), staging(), deadline_);
    optimizer_.learning_rate = job.learning_rate;
    optimizer_.validate();
    const std::vector<int64_t> sizes = bucket_sizes(c_.triples, table_id_, shape);
    const auto [smallest, largest] = std::minmax_element(sizes.begin(), sizes.end());
    spdlog::info("trainer {}: entity embeddings on disk in {}: {} partitions, regrouped every epoch from {} logical "
                 "ones of ~{} rows ({:.1f} MiB each with their accumulators), a buffer of {} ({} logical); logical edge "
                 "buckets of {} to {} triples",
                 c_.trainer, disk_->dir(), job.link.embedding_partitions, shape.num_partitions,
                 shape.num_entities / shape.num_partitions, static_cast<double>(disk_->payload_bytes(0)) / (1 << 20),
                 job.link.embedding_buffer, logical_capacity(), *smallest, *largest);
  }

  void begin_epoch(uint64_t epoch, int64_t steps) override {
    plan_ = plan_bucket_epoch(c_.triples, table_id_, disk_->shape(), c_.job.link.embedding_partitions,
                              c_.job.link.embedding_buffer, c_.job.seed, epoch, c_.job.batch_size);
    state_ = kNoState;
    states_entered_ = 0;
    if (steps > plan_.steps) {
      throw Error("asked for " + std::to_string(steps) + " steps, the epoch's walk has " + std::to_string(plan_.steps));
    }
    before_ = partitions_->stats();
  }

  // The step-th slice of batch_size triples of its buffer state's, whole.
  StepTriples step_triples(int64_t step) override {
    enter_state_of(step);
    const std::vector<int64_t>& slice = plan_.edges[state_];
    const int64_t begin = (step - plan_.first_step[state_]) * c_.job.batch_size;
    const int64_t end = std::min<int64_t>(begin + c_.job.batch_size, static_cast<int64_t>(slice.size()));
    StepTriples out;
    for (int64_t i = 0; i < end - begin; ++i) {
      out.positions.push_back(i);
      out.edges.push_back(slice[static_cast<size_t>(begin + i)]);
    }
    return out;
  }

  std::vector<int64_t> draw_negatives(uint64_t epoch, int64_t step, int64_t chunk) const override {
    return draw_buffer_negatives(c_.triples, c_.negatives, plan_, state_, state_edges_, table_id_, disk_->shape(),
                                 c_.job.seed, epoch, static_cast<uint64_t>(step), static_cast<uint64_t>(chunk));
  }

  // The buffer's negatives at their in-memory weight (embeddings/bucket_epoch.h).
  at::Tensor negative_log_rates(const std::vector<int64_t>& heads, const std::vector<int64_t>& tails,
                                const std::vector<int64_t>& negatives,
                                const std::vector<int64_t>& chunk_of) const override {
    if (plan_.log_rate.empty()) return {};
    const int64_t p = static_cast<int64_t>(heads.size());
    const int64_t k = c_.negatives.k;
    const int groups = c_.job.link.embedding_partitions;
    auto physical = [&](int64_t id) {
      return plan_.group_of[static_cast<size_t>(disk_->partition_of(table_id_[static_cast<size_t>(id)]))];
    };
    std::vector<int> negative_group(negatives.size());
    for (size_t j = 0; j < negatives.size(); ++j) negative_group[j] = physical(negatives[j]);
    at::Tensor out = torch::empty({p, k}, torch::kFloat);
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < p; ++i) {
      const double* row =
          plan_.log_rate.data() + (static_cast<size_t>(physical(heads[i])) * groups + physical(tails[i])) * groups;
      const int* g = negative_group.data() + chunk_of[i] * k;
      for (int64_t j = 0; j < k; ++j) o[i * k + j] = static_cast<float>(row[g[j]]);
    }
    return out;
  }

  // From the buffer (training: all resident) or, with the buffer flushed, from the files.
  void read(const std::vector<int64_t>& ids, float* out) override {
    const int64_t dim = c_.job.link.dim;
    std::vector<int64_t> table(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) table[i] = table_id_[static_cast<size_t>(ids[i])];
    if (partitions_->resident_count() == 0) {
      disk_->read_rows(Span<const int64_t>(table), out);
      return;
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      const int part = disk_->partition_of(table[i]);
      const Span<float> values = partitions_->values(part);
      std::memcpy(out + i * dim, values.data() + (table[i] - disk_->begin(part)) * dim,
                  static_cast<size_t>(dim) * sizeof(float));
    }
  }

  void read_range(int /*part*/, int64_t first, int64_t last, float* out) override {
    std::vector<int64_t> ids(static_cast<size_t>(last - first));
    for (int64_t i = first; i < last; ++i) ids[i - first] = i;
    read(ids, out);
  }

  // To the resident partitions, as an embedding shard applies them (embeddings/sparse_adagrad.h).
  void apply_gradients(const std::vector<int64_t>& ids, const std::vector<float>& grads) override {
    const int64_t dim = c_.job.link.dim;
    const int p = disk_->num_partitions();
    std::vector<std::vector<int64_t>> rows(static_cast<size_t>(p));
    std::vector<std::vector<float>> part_grads(static_cast<size_t>(p));
    for (size_t i = 0; i < ids.size(); ++i) {
      const int64_t t = table_id_[static_cast<size_t>(ids[i])];
      const int part = disk_->partition_of(t);
      rows[part].push_back(t - disk_->begin(part));
      part_grads[part].insert(part_grads[part].end(), grads.begin() + i * dim, grads.begin() + (i + 1) * dim);
    }
    for (int part = 0; part < p; ++part) {
      if (rows[part].empty()) continue;
      optimizer_.step(partitions_->values(part), partitions_->accumulators(part), dim, Span<const int64_t>(rows[part]),
                      Span<const float>(part_grads[part]));
    }
  }

  // The files hold the epoch's table: evaluation and checkpoints read them.
  void end_epoch(uint64_t epoch) override {
    partitions_->flush();
    state_ = kNoState;
    trained_epoch_ = epoch;
    const PartitionBuffer::Stats& after = partitions_->stats();
    spdlog::info("trainer {}: epoch {}: {} of the walk's {} swaps (lower bound {}), {} logical partitions read ({} "
                 "prefetched), {} written, {:.2f} s in swaps, {:.2f} s waiting for reads, at most {} of {} "
                 "resident and {} staged",
                 c_.trainer, epoch, std::max<int64_t>(states_entered_ - 1, 0), plan_.order.swaps(),
                 swap_lower_bound(c_.job.link.embedding_partitions, c_.job.link.embedding_buffer),
                 after.reads - before_.reads, after.prefetched - before_.prefetched, after.writes - before_.writes,
                 after.swap_seconds - before_.swap_seconds, after.wait_seconds - before_.wait_seconds,
                 after.peak_resident, partitions_->capacity(), after.peak_staged);
  }

  // No half-entered state outlives the epoch: evaluation and the next walk read the files,
  // each whole as last written, with the rows trained so far written back.
  std::string settle() override {
    std::string unsaved = partitions_->settle();
    state_ = kNoState;
    return unsaved;
  }

  // The table on disk is the rest of the state: the epoch's end left it flushed into its
  // files, which the snapshot keeps as they are now.
  void save(torch::serialize::OutputArchive& archive) override {
    if (partitions_->resident_count() != 0) throw Error("saving the state in the middle of an epoch's walk");
    disk_->snapshot(snapshot_dir(c_.job), snapshot_tag(trained_epoch_));
    archive.write("table_epoch", torch::tensor(static_cast<int64_t>(trained_epoch_)));
  }

  void load(torch::serialize::InputArchive& archive) override {
    at::Tensor table_epoch;
    if (!archive.try_read("table_epoch", table_epoch) || table_epoch.numel() != 1) {
      throw Error("the checkpoint holds no embedding table on disk (embeddings.storage changed?)");
    }
    const uint64_t epoch = static_cast<uint64_t>(table_epoch.item<int64_t>());
    partitions_.reset();  // it reads the table being replaced
    try {
      disk_ = std::make_unique<EmbeddingPartitions>(
          EmbeddingPartitions::restore(snapshot_dir(c_.job), snapshot_tag(epoch), embedding_dir(c_.job), shape_of()));
    } catch (...) {
      // A refused snapshot leaves the table as it was; the step's error path still settles it.
      partitions_ = std::make_unique<PartitionBuffer>(*disk_, logical_capacity(), staging(), deadline_);
      throw;
    }
    partitions_ = std::make_unique<PartitionBuffer>(*disk_, logical_capacity(), staging(), deadline_);
    trained_epoch_ = epoch;
  }

 private:
  static constexpr size_t kNoState = ~size_t{0};

  EmbeddingPartitions::Shape shape_of() const {
    return buffer_table_shape(c_.triples.num_entities(), c_.job.link.embedding_partitions, c_.job.link.dim);
  }
  // The buffer's budget in the table's (logical) partitions: c physical ones.
  int logical_capacity() const {
    return c_.job.link.embedding_buffer * (disk_->num_partitions() / c_.job.link.embedding_partitions);
  }
  // The partitions a swap reads: one physical partition's logical ones (0 without prefetch).
  int staging() const {
    return c_.job.link.embedding_prefetch ? disk_->num_partitions() / c_.job.link.embedding_partitions : 0;
  }

  // Walks the buffer to the state that trains `step` of the epoch's plan, and starts reading
  // every logical partition the state after it admits (one physical partition: the swap).
  void enter_state_of(int64_t step) {
    const size_t k = plan_.state_of_step(step);
    if (k == state_) return;
    partitions_->enter(plan_.resident[k]);
    state_ = k;
    ++states_entered_;
    state_edges_ = plan_.edges[k];
    std::sort(state_edges_.begin(), state_edges_.end());
    if (c_.job.link.embedding_prefetch && k + 1 < plan_.resident.size()) {
      std::vector<int> arriving;
      for (int next : plan_.resident[k + 1]) {
        if (!partitions_->resident(next)) arriving.push_back(next);
      }
      partitions_->prefetch(arriving);
    }
  }

  KgTrainerContext c_;
  std::chrono::milliseconds deadline_;
  std::unique_ptr<EmbeddingPartitions> disk_;
  std::unique_ptr<PartitionBuffer> partitions_;
  std::vector<int64_t> table_id_;  // the table row (original node id's place) of each global id
  BucketEpoch plan_;
  PartitionBuffer::Stats before_;  // the buffer's stats as the epoch began
  int64_t states_entered_ = 0;     // this epoch's: its swaps are one fewer
  std::vector<int64_t> state_edges_;  // the state's own edges, sorted: the degree-based negatives' triples
  size_t state_ = kNoState;  // the plan's state the buffer holds; kNoState before an epoch's first step
  SparseAdagrad optimizer_;
  uint64_t trained_epoch_ = 0;  // the last epoch trained whole (or restored): the files' epoch
};

}  // namespace

std::unique_ptr<KgEntities> sharded_kg_entities(const KgTrainerContext& trainer, caf::actor_system& system,
                                                std::vector<caf::actor> shards, const std::string& run_key,
                                                std::chrono::milliseconds deadline) {
  return std::make_unique<ShardedEntities>(
      trainer, std::make_unique<ShardedEmbedding>(system, trainer.book, std::move(shards), run_key, trainer.trainer,
                                                  trainer.job.link.dim, deadline));
}

std::unique_ptr<KgEntities> disk_kg_entities(const KgTrainerContext& trainer, std::chrono::milliseconds deadline) {
  return std::make_unique<DiskEntities>(trainer, deadline);
}

}  // namespace partita
