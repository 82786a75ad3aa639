#include "embeddings/sharded_embedding.h"

#include <caf/all.hpp>

#include <algorithm>
#include <cstring>
#include <optional>

#include "base/error.h"

namespace partita {

struct ShardedEmbedding::Remote {
  explicit Remote(int part) : client("embedding shard " + std::to_string(part) + ": channel") {}
  runtime::RequestClient client;
  std::vector<char> request, head;
};

ShardedEmbedding::ShardedEmbedding(caf::actor_system& system, const PartitionBook& book, std::vector<caf::actor> shards,
                                   const std::string& run_key, int trainer, int64_t dim,
                                   std::chrono::milliseconds deadline)
    : book_(book), trainer_(trainer), dim_(dim), deadline_(deadline) {
  if (static_cast<int>(shards.size()) != book.num_parts()) {
    throw Error(std::to_string(shards.size()) + " embedding shards for " + std::to_string(book.num_parts()) + " parts");
  }
  local_.resize(shards.size());
  remote_.resize(shards.size());
  caf::scoped_actor self(system);
  for (int p = 0; p < book.num_parts(); ++p) {
    local_[p] = find_local_shard(run_key, p);
    if (local_[p]) continue;
    std::optional<runtime::ChannelOffer> offer;
    std::string failure;
    self->request(caf::actor_cast<embedding_shard_actor>(shards[p]), deadline, shard_channel_atom::value)
        .receive(
            [&](std::string& host, uint16_t port, uint64_t token, uint32_t client) {
              offer = runtime::ChannelOffer{std::move(host), port, token, client};
            },
            [&](caf::error& e) { failure = system.render(e); });
    if (!offer) throw Error("embedding shard " + std::to_string(p) + ": no channel: " + failure);
    remote_[p] = std::make_unique<Remote>(p);
    remote_[p]->client.open(*offer, static_cast<uint32_t>(p), deadline);
  }
}

ShardedEmbedding::~ShardedEmbedding() = default;

uint64_t ShardedEmbedding::exchange(int part, const shard_wire::RequestHead& head, Span<const int64_t> ids,
                                    Span<const float> grads) {
  Remote& r = *remote_[part];
  constexpr size_t kHead = runtime::wire::kShardRequestHeadBytes;
  r.request.resize(kHead + ids.size() * sizeof(int64_t) + grads.size() * sizeof(float));
  runtime::wire::encode_shard_request_head(head, reinterpret_cast<unsigned char*>(r.request.data()));
  if (!ids.empty()) std::memcpy(r.request.data() + kHead, ids.data(), ids.size() * sizeof(int64_t));
  if (!grads.empty()) {
    std::memcpy(r.request.data() + kHead + ids.size() * sizeof(int64_t), grads.data(), grads.size() * sizeof(float));
  }
  r.client.send(Span<const char>(r.request), deadline_);
  uint64_t body = 0;
  const size_t length = r.client.receive_head(r.head, body, deadline_);
  uint32_t status = runtime::wire::kShardReplyRefused;
  if (length >= sizeof(status)) std::memcpy(&status, r.head.data(), sizeof(status));
  if (status != runtime::wire::kShardReplyOk) {
    r.client.discard_body(deadline_);
    const size_t text = length > sizeof(status) ? length - sizeof(status) : 0;
    throw Error(std::string(r.head.data() + sizeof(status), text));
  }
  return body;
}

void ShardedEmbedding::read(Span<const int64_t> ids, float* out) {
  size_t i = 0;
  while (i < ids.size()) {
    const int p = book_.owner(ids[i]);
    const size_t j = static_cast<size_t>(std::lower_bound(ids.begin() + i, ids.end(), book_.end(p)) - ids.begin());
    Span<const int64_t> part_ids = ids.subspan(i, j - i);
    float* target = out + i * dim_;
    if (local_[p]) {
      local_[p]->read(trainer_, part_ids, target, deadline_);
    } else {
      const shard_wire::RequestHead head{shard_wire::Op::kRead, trainer_, static_cast<int64_t>(part_ids.size()), 0};
      const uint64_t body = exchange(p, head, part_ids, {});
      if (body != part_ids.size() * dim_ * sizeof(float)) {
        throw Error("embedding shard " + std::to_string(p) + ": a reply of " + std::to_string(body) + " bytes for " +
                    std::to_string(part_ids.size()) + " rows");
      }
      remote_[p]->client.receive_body(target, body, deadline_);
    }
    i = j;
  }
}

void ShardedEmbedding::read_range(int part, int64_t first, int64_t last, float* out) {
  if (local_[part]) {
    local_[part]->read_range(first, last, out, deadline_);
    return;
  }
  const shard_wire::RequestHead head{shard_wire::Op::kReadRange, trainer_, last - first, first};
  const uint64_t body = exchange(part, head, {}, {});
  if (body != static_cast<uint64_t>((last - first) * dim_) * sizeof(float)) {
    throw Error("embedding shard " + std::to_string(part) + ": a range reply of " + std::to_string(body) + " bytes");
  }
  remote_[part]->client.receive_body(out, body, deadline_);
}

void ShardedEmbedding::push(Span<const int64_t> ids, Span<const float> grads) {
  size_t i = 0;
  for (int p = 0; p < book_.num_parts(); ++p) {
    const size_t j = static_cast<size_t>(std::lower_bound(ids.begin() + i, ids.end(), book_.end(p)) - ids.begin());
    Span<const int64_t> part_ids = ids.subspan(i, j - i);
    Span<const float> part_grads = grads.subspan(i * dim_, (j - i) * dim_);
    if (local_[p]) {
      local_[p]->push(trainer_, part_ids, part_grads);
    } else {
      const shard_wire::RequestHead head{shard_wire::Op::kPush, trainer_, static_cast<int64_t>(part_ids.size()), 0};
      exchange(p, head, part_ids, part_grads);
    }
    i = j;
  }
}

void ShardedEmbedding::write(Span<const int64_t> ids, Span<const float> values) {
  if (values.size() != ids.size() * static_cast<size_t>(dim_)) {
    throw Error("embedding table: " + std::to_string(values.size()) + " values for " + std::to_string(ids.size()) +
                " rows of " + std::to_string(dim_));
  }
  size_t i = 0;
  while (i < ids.size()) {
    const int p = book_.owner(ids[i]);
    const size_t j = static_cast<size_t>(std::lower_bound(ids.begin() + i, ids.end(), book_.end(p)) - ids.begin());
    Span<const int64_t> part_ids = ids.subspan(i, j - i);
    Span<const float> part_values = values.subspan(i * dim_, (j - i) * dim_);
    if (local_[p]) {
      local_[p]->write(part_ids, part_values);
    } else {
      const shard_wire::RequestHead head{shard_wire::Op::kWrite, trainer_, static_cast<int64_t>(part_ids.size()), 0};
      exchange(p, head, part_ids, part_values);
    }
    i = j;
  }
}

}  // namespace partita
