#include "embeddings/embedding_shard.h"

#include <caf/all.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <stdexcept>
#include <type_traits>
#include <unordered_set>

#include "actors/actor_types.h"
#include "base/checksum.h"
#include "base/error.h"
#include "base/random.h"
#include "partitioner/partition_format.h"
#include "runtime/settings.h"
#include "runtime/transport/request_channel.h"

namespace partita {

namespace {

using std::chrono::milliseconds;

// Version 2 added the optimiser's kind and step count to the header; version 1 files
// (Adagrad's state, header begin, end, dim) still load into an Adagrad shard.
constexpr char kMagic[8] = {'P', 'T', 'S', 'H', 'A', 'R', 'D', '2'};
constexpr char kMagicV1[8] = {'P', 'T', 'S', 'H', 'A', 'R', 'D', '1'};
// The header after the envelope: begin, end, dim, optimiser kind, optimiser steps.
constexpr size_t kHeaderValues = 5;
// A trainer that connected but sends nothing for this long is dropped; waits for a step to
// be applied use the caller's deadline.
constexpr milliseconds kSessionDeadline{120000};

std::string shard_name(int part) { return "embedding shard " + std::to_string(part); }

// A required setting as a number (T: double or uint64_t); UsageError naming it otherwise.
template <typename T>
T number_setting(const runtime::Settings& settings, const std::string& key) {
  const std::string& text = runtime::required_setting(settings, key);
  try {
    size_t used = 0;
    const T value = std::is_same<T, double>::value ? static_cast<T>(std::stod(text, &used))
                                                    : static_cast<T>(std::stoull(text, &used));
    if (used == text.size()) return value;
  } catch (const std::logic_error&) {
  }
  throw UsageError("setting '" + key + "': '" + text + "' is not a number");
}

}  // namespace

void initial_embedding_row(uint64_t seed, double init_std, int64_t original_id, int64_t dim, float* out) {
  Rng rng(mix64(seed, 0x656d6200ull /* "emb" */, static_cast<uint64_t>(original_id)));
  for (int64_t j = 0; j < dim; ++j) out[j] = static_cast<float>(rng.normal() * init_std);
}

EmbeddingShard::EmbeddingShard(EmbeddingShardConfig config, Span<const int64_t> original_ids)
    : config_(std::move(config)) {
  config_.optimizer.validate();
  if (config_.dim < 1) throw UsageError(shard_name(config_.part) + ": dim must be at least 1");
  if (config_.num_trainers < 1) throw UsageError(shard_name(config_.part) + ": needs at least one trainer");
  const int64_t rows = config_.end - config_.begin;
  if (rows < 0 || static_cast<int64_t>(original_ids.size()) != rows) {
    throw Error(shard_name(config_.part) + ": " + std::to_string(original_ids.size()) + " original ids for " +
                std::to_string(rows) + " rows");
  }
  table_.resize(static_cast<size_t>(rows * config_.dim));
  state_.assign(table_.size() * static_cast<size_t>(config_.optimizer.state_slots()), config_.optimizer.initial_state());
  for (int64_t r = 0; r < rows; ++r) {
    initial_embedding_row(config_.seed, config_.init_std, original_ids[r], config_.dim, table_.data() + r * config_.dim);
  }
  pushed_.assign(static_cast<size_t>(config_.num_trainers), 0);
  pending_ids_.resize(pushed_.size());
  pending_grads_.resize(pushed_.size());
}

int64_t EmbeddingShard::row_of(int64_t id) const {
  if (id < config_.begin || id >= config_.end) {
    throw Error(shard_name(config_.part) + ": entity " + std::to_string(id) + " is not one of its ids [" +
                std::to_string(config_.begin) + ", " + std::to_string(config_.end) + ")");
  }
  return id - config_.begin;
}

void EmbeddingShard::check_rows(Span<const int64_t> ids, size_t values, const char* values_name,
                                const char* repeated) const {
  if (values != ids.size() * static_cast<size_t>(config_.dim)) {
    throw Error(shard_name(config_.part) + ": " + std::to_string(values) + " " + values_name + " for " +
                std::to_string(ids.size()) + " rows of " + std::to_string(config_.dim));
  }
  std::unordered_set<int64_t> seen;
  for (int64_t id : ids) {
    row_of(id);
    if (!seen.insert(id).second) throw Error(shard_name(config_.part) + ": entity " + std::to_string(id) + " " + repeated);
  }
}

void EmbeddingShard::read(int trainer, Span<const int64_t> ids, float* out, milliseconds deadline) {
  if (trainer < 0 || trainer >= config_.num_trainers) {
    throw Error(shard_name(config_.part) + ": no trainer " + std::to_string(trainer));
  }
  for (int64_t id : ids) row_of(id);  // checks before waiting
  std::unique_lock<std::mutex> lock(mutex_);
  if (!applied_cv_.wait_for(lock, deadline, [&] { return stopped_ || applied_ >= pushed_[trainer]; })) {
    throw Error(shard_name(config_.part) + ": step " + std::to_string(pushed_[trainer]) + " of trainer " +
                std::to_string(trainer) + " was not applied within " + std::to_string(deadline.count() / 1000) +
                " s (a trainer did not send its gradients)");
  }
  check_running();
  const size_t bytes = static_cast<size_t>(config_.dim) * sizeof(float);
  for (size_t i = 0; i < ids.size(); ++i) {
    std::memcpy(out + i * config_.dim, table_.data() + row_of(ids[i]) * config_.dim, bytes);
  }
}

void EmbeddingShard::read_range(int64_t first, int64_t last, float* out, milliseconds deadline) {
  if (first > last || (first < last && (row_of(first) < 0 || row_of(last - 1) < 0))) {
    throw Error(shard_name(config_.part) + ": bad range [" + std::to_string(first) + ", " + std::to_string(last) + ")");
  }
  std::unique_lock<std::mutex> lock(mutex_);
  if (!applied_cv_.wait_for(lock, deadline, [&] { return stopped_ || settled(); })) {
    throw Error(shard_name(config_.part) + ": a step was still pending after " + std::to_string(deadline.count() / 1000) + " s");
  }
  check_running();
  if (first == last) return;
  std::memcpy(out, table_.data() + (first - config_.begin) * config_.dim,
              static_cast<size_t>((last - first) * config_.dim) * sizeof(float));
}

void EmbeddingShard::push(int trainer, Span<const int64_t> ids, Span<const float> grads) {
  if (trainer < 0 || trainer >= config_.num_trainers) {
    throw Error(shard_name(config_.part) + ": no trainer " + std::to_string(trainer));
  }
  check_rows(ids, grads.size(), "gradient values", "pushed twice in one step");
  std::lock_guard<std::mutex> lock(mutex_);
  check_running();
  if (pushed_[trainer] != applied_) {
    throw Error(shard_name(config_.part) + ": trainer " + std::to_string(trainer) + " pushed step " +
                std::to_string(pushed_[trainer] + 1) + " before step " + std::to_string(applied_ + 1) + " was applied");
  }
  pending_ids_[trainer].assign(ids.begin(), ids.end());
  pending_grads_[trainer].assign(grads.begin(), grads.end());
  ++pushed_[trainer];
  if (std::all_of(pushed_.begin(), pushed_.end(), [&](uint64_t p) { return p == applied_ + 1; })) apply_pending();
}

void EmbeddingShard::write(Span<const int64_t> ids, Span<const float> values) {
  check_rows(ids, values.size(), "values", "written twice");
  std::lock_guard<std::mutex> lock(mutex_);
  check_running();
  if (!settled()) throw Error(shard_name(config_.part) + ": rows written while a step is pending");
  const size_t bytes = static_cast<size_t>(config_.dim) * sizeof(float);
  for (size_t i = 0; i < ids.size(); ++i) {
    std::memcpy(table_.data() + row_of(ids[i]) * config_.dim, values.data() + i * config_.dim, bytes);
  }
}

void EmbeddingShard::apply_pending() {
  // The sum of every trainer's gradient per row, in trainer order, rows in order of first
  // appearance: the same float operations whatever order the pushes arrived in.
  std::vector<int64_t> rows;
  std::vector<float> sums;
  std::map<int64_t, size_t> slot;
  const size_t dim = static_cast<size_t>(config_.dim);
  for (size_t t = 0; t < pending_ids_.size(); ++t) {
    for (size_t i = 0; i < pending_ids_[t].size(); ++i) {
      const int64_t row = pending_ids_[t][i] - config_.begin;
      auto [it, inserted] = slot.try_emplace(row, rows.size());
      if (inserted) {
        rows.push_back(row);
        sums.insert(sums.end(), pending_grads_[t].begin() + i * dim, pending_grads_[t].begin() + (i + 1) * dim);
      } else {
        float* sum = sums.data() + it->second * dim;
        const float* g = pending_grads_[t].data() + i * dim;
        for (size_t j = 0; j < dim; ++j) sum[j] += g[j];
      }
    }
    pending_ids_[t].clear();
    pending_grads_[t].clear();
  }
  // Every step counts, even one that touched none of this shard's rows: SparseAdam's bias
  // correction follows the table's steps, as torch's does for one parameter.
  config_.optimizer.step(Span<float>(table_), Span<float>(state_), config_.dim, Span<const int64_t>(rows),
                         Span<const float>(sums), optimizer_steps_ + 1);
  ++optimizer_steps_;
  ++applied_;
  applied_cv_.notify_all();
}

std::vector<char> EmbeddingShard::save(milliseconds deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!applied_cv_.wait_for(lock, deadline, [&] { return stopped_ || settled(); })) {
    throw Error(shard_name(config_.part) + ": a step was still pending after " + std::to_string(deadline.count() / 1000) + " s");
  }
  check_running();
  const int64_t header[kHeaderValues] = {config_.begin, config_.end, config_.dim,
                                         static_cast<int64_t>(config_.optimizer.kind),
                                         static_cast<int64_t>(optimizer_steps_)};
  const size_t payload = sizeof(header) + (table_.size() + state_.size()) * sizeof(float);
  std::vector<char> bytes(sizeof(kMagic) + sizeof(uint64_t) + payload);
  char* p = bytes.data();
  std::memcpy(p, kMagic, sizeof(kMagic));
  char* body = p + sizeof(kMagic) + sizeof(uint64_t);
  std::memcpy(body, header, sizeof(header));
  // A shard may own no rows (a partition without entities): nothing to copy then.
  if (!table_.empty()) {
    std::memcpy(body + sizeof(header), table_.data(), table_.size() * sizeof(float));
    std::memcpy(body + sizeof(header) + table_.size() * sizeof(float), state_.data(), state_.size() * sizeof(float));
  }
  const uint64_t sum = checksum(body, payload);
  std::memcpy(p + sizeof(kMagic), &sum, sizeof(sum));
  return bytes;
}

void EmbeddingShard::load(const std::vector<char>& bytes) {
  const std::string name = shard_name(config_.part);
  const size_t envelope = sizeof(kMagic) + sizeof(uint64_t);
  // Version 1 (Adagrad's state, no step count) loads into an Adagrad shard as it was saved:
  // Adagrad does not read the count.
  const bool v1 = bytes.size() >= sizeof(kMagicV1) && std::memcmp(bytes.data(), kMagicV1, sizeof(kMagicV1)) == 0;
  if (!v1 && (bytes.size() < envelope || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)) {
    throw Error(name + ": the checkpoint is not an embedding shard's");
  }
  int64_t header[kHeaderValues] = {0, 0, 0, static_cast<int64_t>(RowOptimizerKind::kAdagrad), 0};
  const size_t header_bytes = (v1 ? 3 : kHeaderValues) * sizeof(int64_t);
  const size_t payload = header_bytes + (table_.size() + state_.size()) * sizeof(float);
  const char* body = bytes.data() + envelope;
  if (bytes.size() < envelope + header_bytes) throw Error(name + ": the checkpoint is cut short");
  // Integrity before meaning: a damaged byte anywhere (the optimiser's kind or the step
  // count included) is named as damage, not as another job's checkpoint.
  uint64_t sum = 0;
  std::memcpy(&sum, bytes.data() + sizeof(kMagic), sizeof(sum));
  if (checksum(body, bytes.size() - envelope) != sum) throw Error(name + ": the checkpoint is corrupt (checksum mismatch)");
  std::memcpy(header, body, header_bytes);
  // The optimiser before the size: its state's size tells the payload's.
  if (header[3] != static_cast<int64_t>(config_.optimizer.kind)) {
    throw Error(name + ": the checkpoint was trained with another optimiser than the job's " +
                config_.optimizer.name() + " (train.optimizer changed?)");
  }
  if (bytes.size() != envelope + payload) {
    throw Error(name + ": the checkpoint holds " + std::to_string(bytes.size()) + " bytes, expected " +
                std::to_string(envelope + payload) + " (another table?)");
  }
  if (header[0] != config_.begin || header[1] != config_.end || header[2] != config_.dim) {
    throw Error(name + ": the checkpoint holds ids [" + std::to_string(header[0]) + ", " + std::to_string(header[1]) +
                ") of dim " + std::to_string(header[2]) + ", this shard [" + std::to_string(config_.begin) + ", " +
                std::to_string(config_.end) + ") of dim " + std::to_string(config_.dim));
  }
  if (header[4] < 0) {
    throw Error(name + ": the checkpoint's optimiser step count is negative (" + std::to_string(header[4]) + ")");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (!table_.empty()) {
    std::memcpy(table_.data(), body + header_bytes, table_.size() * sizeof(float));
    std::memcpy(state_.data(), body + header_bytes + table_.size() * sizeof(float), state_.size() * sizeof(float));
  }
  optimizer_steps_ = static_cast<uint64_t>(header[4]);
  std::fill(pushed_.begin(), pushed_.end(), 0);
  applied_ = 0;
  for (auto& v : pending_ids_) v.clear();
  for (auto& v : pending_grads_) v.clear();
}

bool EmbeddingShard::settled() const {
  return std::all_of(pushed_.begin(), pushed_.end(), [&](uint64_t p) { return p == applied_; });
}

void EmbeddingShard::check_running() const {
  if (stopped_) throw EmbeddingShardStopped(shard_name(config_.part) + " stopped (its job ended)");
}

void EmbeddingShard::stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  stopped_ = true;
  applied_cv_.notify_all();
}

namespace {

std::mutex registry_mutex;
std::map<std::pair<std::string, int>, std::weak_ptr<EmbeddingShard>>& registry() {
  static std::map<std::pair<std::string, int>, std::weak_ptr<EmbeddingShard>> shards;
  return shards;
}

void register_local(const std::string& run_key, int part, const std::shared_ptr<EmbeddingShard>& shard) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto& shards = registry();
  for (auto it = shards.begin(); it != shards.end();) it = it->second.expired() ? shards.erase(it) : std::next(it);
  shards[{run_key, part}] = shard;
}

}  // namespace

namespace shard_wire {

void refuse(const std::string& why, runtime::ChannelReply& reply) {
  const uint32_t status = runtime::wire::kShardReplyRefused;
  reply.head.resize(sizeof(status) + why.size());
  std::memcpy(reply.head.data(), &status, sizeof(status));
  if (!why.empty()) std::memcpy(reply.head.data() + sizeof(status), why.data(), why.size());
  reply.head_length = reply.head.size();
  reply.body_bytes = 0;
  reply.fill = nullptr;
}

void answer(EmbeddingShard& shard, Span<const char> request, runtime::ChannelReply& reply, milliseconds wait) {
  try {
    RequestHead head;
    if (!runtime::wire::decode_shard_request_head(reinterpret_cast<const unsigned char*>(request.data()),
                                                  request.size(), head)) {
      throw Error("a request of " + std::to_string(request.size()) + " bytes is too short");
    }
    const EmbeddingShardConfig& config = shard.config();
    const size_t dim = static_cast<size_t>(config.dim);
    const size_t row_bytes = dim * sizeof(float);
    const size_t rest = request.size() - runtime::wire::kShardRequestHeadBytes;
    const char* data = request.data() + runtime::wire::kShardRequestHeadBytes;
    // No reply body over the channel's limit, and no request whose ids and rows could not
    // fit in one (so that count x (8 + row bytes) cannot overflow below).
    if (head.count < 0 || static_cast<uint64_t>(head.count) > runtime::wire::kMaxReplyBodyBytes / row_bytes) {
      throw Error("a request for " + std::to_string(head.count) + " rows");
    }
    const size_t n = static_cast<size_t>(head.count);
    const auto expect_length = [&](size_t bytes, const char* what) {
      if (rest != bytes) {
        throw Error(std::string("a ") + what + " request of " + std::to_string(request.size()) + " bytes for " +
                    std::to_string(n) + " rows");
      }
    };
    // The ids, when the frame holds that many (only a frame of the right length is answered).
    std::vector<int64_t> ids;
    if (n > 0 && rest >= n * sizeof(int64_t)) {
      ids.resize(n);
      std::memcpy(ids.data(), data, n * sizeof(int64_t));
    }
    reply.storage.resize(0);
    switch (head.op) {
      case Op::kRead:
        expect_length(n * sizeof(int64_t), "read");
        reply.storage.resize(n * row_bytes);
        shard.read(head.trainer, Span<const int64_t>(ids), reinterpret_cast<float*>(reply.storage.data()), wait);
        break;
      case Op::kReadRange:
        expect_length(0, "range");
        // Inside the shard before anything is allocated (and head.first + count cannot
        // overflow).
        if (head.first < config.begin || head.first > config.end || head.count > config.end - head.first) {
          throw Error("a range of " + std::to_string(head.count) + " rows from " + std::to_string(head.first) +
                      " outside the shard's ids [" + std::to_string(config.begin) + ", " +
                      std::to_string(config.end) + ")");
        }
        reply.storage.resize(n * row_bytes);
        shard.read_range(head.first, head.first + head.count, reinterpret_cast<float*>(reply.storage.data()), wait);
        break;
      case Op::kPush:
      case Op::kWrite: {
        expect_length(n * sizeof(int64_t) + n * row_bytes, head.op == Op::kPush ? "push" : "write");
        const char* values = data + n * sizeof(int64_t);
        // The rows in place when they are aligned (a frame's buffer is), else a copy.
        std::vector<float> copy;
        Span<const float> rows(reinterpret_cast<const float*>(values), n * dim);
        if (reinterpret_cast<uintptr_t>(values) % alignof(float) != 0) {
          copy.resize(n * dim);
          if (!copy.empty()) std::memcpy(copy.data(), values, copy.size() * sizeof(float));
          rows = Span<const float>(copy);
        }
        if (head.op == Op::kPush) {
          shard.push(head.trainer, Span<const int64_t>(ids), rows);
        } else {
          shard.write(Span<const int64_t>(ids), rows);
        }
        break;
      }
      default: throw Error("unknown operation " + std::to_string(static_cast<uint32_t>(head.op)));
    }
    const uint32_t ok = runtime::wire::kShardReplyOk;
    reply.head.resize(sizeof(ok));
    std::memcpy(reply.head.data(), &ok, sizeof(ok));
    reply.head_length = sizeof(ok);
    reply.body_bytes = reply.storage.size();
    reply.body_unit = 1;
    const char* body = reply.storage.data();
    reply.fill = [body](char* piece, uint64_t offset, uint64_t bytes) { std::memcpy(piece, body + offset, bytes); };
  } catch (const std::exception& e) {
    refuse(e.what(), reply);
  }
}

}  // namespace shard_wire

namespace {

struct ShardState {
  std::string run_key;
  std::shared_ptr<EmbeddingShard> shard;
  std::unique_ptr<runtime::RequestServer> server;
  std::string host;
  // The actor exits: trainers still waiting on the shard fail now, not at their deadline.
  ~ShardState() {
    if (shard) shard->stop();
  }
};

embedding_shard_actor::behavior_type shard_behavior(embedding_shard_actor::stateful_pointer<ShardState> self,
                                                    std::shared_ptr<EmbeddingShard> shard, std::string run_key,
                                                    std::string host) {
  self->state.run_key = std::move(run_key);
  self->state.shard = std::move(shard);
  self->state.host = std::move(host);
  return {
      [self](shard_channel_atom) -> caf::result<std::string, uint16_t, uint64_t, uint32_t> {
        auto& s = self->state;
        try {
          if (!s.server) {
            std::shared_ptr<EmbeddingShard> shard = s.shard;
            s.server = std::make_unique<runtime::RequestServer>(
                s.host, static_cast<uint32_t>(shard->config().part),
                [shard]() {
                  runtime::ChannelService service;
                  service.answer = [shard](Span<const char> request, runtime::ChannelReply& reply) {
                    shard_wire::answer(*shard, request, reply, kSessionDeadline);
                  };
                  service.refuse = shard_wire::refuse;
                  return service;
                },
                kSessionDeadline, shard_name(shard->config().part));
          }
          const runtime::ChannelOffer offer = s.server->open();
          return {offer.host, offer.port, offer.token, offer.client};
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error, shard_name(s.shard->config().part) + ": " + e.what());
        }
      },
      [self](shard_save_atom) -> caf::result<std::vector<char>> {
        try {
          return self->state.shard->save(kSessionDeadline);
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error, e.what());
        }
      },
      [self](shard_load_atom, const std::vector<char>& bytes) -> caf::result<bool> {
        try {
          self->state.shard->load(bytes);
          return true;
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::invalid_argument, e.what());
        }
      },
  };
}

}  // namespace

std::string new_shard_run_key(const std::string& output, uint64_t seed) {
  static std::atomic<uint64_t> counter{0};
  const uint64_t now = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return std::to_string(mix64(now, counter++, seed)) + "@" + output;
}

std::shared_ptr<EmbeddingShard> find_local_shard(const std::string& run_key, int part) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto it = registry().find({run_key, part});
  return it == registry().end() ? nullptr : it->second.lock();
}

void register_embedding_shard_type(runtime::ActorTypeRegistry& registry) {
  registry.add("embedding_shard", [](caf::actor_system& system, const runtime::Settings& settings) {
    const std::string run_key = runtime::required_setting(settings, "run");
    const PartitionFolder folder(partition_dir_setting(settings));
    EmbeddingShardConfig config;
    config.part = static_cast<int>(runtime::integer_setting(settings, "part", 0, folder.meta().num_parts - 1));
    config.begin = folder.book().begin(config.part);
    config.end = folder.book().end(config.part);
    config.dim = runtime::integer_setting(settings, "dim", 1, 1 << 16);
    config.num_trainers = static_cast<int>(runtime::integer_setting(settings, "trainers", 1, 1 << 16));
    config.seed = number_setting<uint64_t>(settings, "seed");
    config.init_std = number_setting<double>(settings, "init_std");
    config.optimizer = RowOptimizer::parse(runtime::text_setting(settings, "optimizer", "adagrad"),
                                           number_setting<double>(settings, "learning_rate"), "setting 'optimizer'");
    const PartitionData data = folder.load_part(config.part);
    auto shard = std::make_shared<EmbeddingShard>(config, data.orig_ids.as<int64_t>());
    register_local(run_key, config.part, shard);
    // Detached: a session's read may wait for a step, and saving waits for pending steps.
    return caf::actor_cast<caf::actor>(system.spawn<caf::detached>(shard_behavior, shard, run_key,
                                                                   runtime::text_setting(settings, "host", "127.0.0.1")));
  });
}

}  // namespace partita
