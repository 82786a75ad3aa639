#include "actors/distributed_sampler.h"

#include <caf/all.hpp>

#include <optional>
#include <string>
#include <utility>

#include "base/error.h"
#include "messages/caf_types.h"

namespace partita {

namespace {

// One round of requests to remote partitions: all are sent before any reply is awaited, so
// the partitions work in parallel (and alongside the caller's local work between send()
// and collect()). Each request has the deadline, counted from its sending.
template <typename Atom>
class Exchange {
 public:
  Exchange(caf::actor_system& system, std::chrono::milliseconds deadline, const char* what)
      : system_(system), deadline_(deadline), what_(what) {}

  void send(int part, const partition_actor& actor, Encoded request) {
    if (!self_) self_.emplace(system_);
    parts_.push_back(part);
    handles_.push_back((*self_)->request(actor, deadline_, Atom::value, std::move(request)));
  }

  // The replies, in the order sent. Throws Error naming the first partition (in that
  // order) that failed to answer.
  std::vector<Encoded> collect() {
    std::vector<Encoded> replies(handles_.size());
    for (size_t i = 0; i < handles_.size(); ++i) {
      std::string failure;
      handles_[i].receive([&](Encoded& reply) { replies[i] = std::move(reply); },
                          [&](caf::error& err) {
                            failure = err == caf::sec::request_timeout
                                          ? "no reply within " + std::to_string(deadline_.count()) + " ms"
                                          : system_.render(err);
                          });
      if (!failure.empty()) throw Error(part_name(parts_[i]) + ": " + what_ + " failed: " + failure);
    }
    return replies;
  }

  int part(size_t i) const { return parts_[i]; }
  size_t size() const { return parts_.size(); }

 private:
  using Handle = decltype(std::declval<caf::scoped_actor&>()->request(
      std::declval<const partition_actor&>(), std::chrono::milliseconds(0), Atom::value, std::declval<Encoded>()));

  caf::actor_system& system_;
  // A fresh blocking actor per round (none when every part is co-located): a reply that
  // arrives after its deadline lands in a mailbox that is already gone instead of lingering
  // for later rounds.
  std::optional<caf::scoped_actor> self_;
  std::chrono::milliseconds deadline_;
  const char* what_;
  std::vector<int> parts_;
  std::vector<Handle> handles_;
};

Span<const char> bytes_of(const Encoded& message) {
  return Span<const char>(message.bytes.data(), message.bytes.size());
}

std::vector<PartitionStores> local_stores(const std::vector<PartitionRef>& parts) {
  std::vector<PartitionStores> local;
  for (size_t p = 0; p < parts.size(); ++p) {
    const PartitionRef& ref = parts[p];
    if (!ref.is_local() && !ref.actor) {
      throw UsageError("distributed sampler: " + part_name(static_cast<int>(p)) + " has neither stores nor an actor");
    }
    local.push_back({ref.topology, ref.features});
  }
  return local;
}

}  // namespace

PartitionRef PartitionRef::local(std::shared_ptr<const Topology> topology,
                                 std::shared_ptr<const FeatureStore> features) {
  PartitionRef ref;
  ref.topology = std::move(topology);
  ref.features = std::move(features);
  return ref;
}

PartitionRef PartitionRef::remote(partition_actor actor) {
  PartitionRef ref;
  ref.actor = std::move(actor);
  return ref;
}

DistributedSampler::DistributedSampler(caf::actor_system& system, PartitionBook book,
                                       std::vector<PartitionRef> parts, SamplerConfig config,
                                       std::chrono::milliseconds deadline, FeatureNames names)
    : system_(system),
      parts_(std::move(parts)),
      deadline_(deadline),
      assembly_(book, config, names, local_stores(parts_)),
      channels_(parts_.size()) {
  for (const PartitionRef& ref : parts_) {
    other_process_.push_back(!ref.is_local() && ref.actor.node() != system_.node());
  }
}

DistributedSampler::~DistributedSampler() = default;

MiniBatch DistributedSampler::sample(Span<const int64_t> seeds, const SampleKey& key, Span<const int64_t> seed_times) {
  MiniBatch batch;
  sample_into(seeds, key, batch, seed_times);
  return batch;
}

void DistributedSampler::sample_into(Span<const int64_t> seeds, const SampleKey& key, MiniBatch& batch,
                                     Span<const int64_t> seed_times) {
  assembly_.start(seeds, key, std::move(batch), seed_times);
  while (assembly_.sampling()) {
    sample_hop_parts();
    assembly_.finish_hop();
  }
  assembly_.start_rows();
  fetch_rows();
  batch = assembly_.finish();
}

void DistributedSampler::sample_hop_parts() {
  Exchange<hop_atom> exchange(system_, deadline_, "hop request");
  std::vector<uint64_t> ids;
  for (int part = 0; part < assembly_.num_parts(); ++part) {
    if (!assembly_.hop_needs(part) || assembly_.is_local(part)) continue;
    Encoded request;
    ids.push_back(next_request_id_++);
    assembly_.hop_request(part, ids.back(), encoder_, request.bytes);
    exchange.send(part, parts_[part].actor, std::move(request));
  }
  // The co-located parts are sampled while the remote ones work.
  for (int part = 0; part < assembly_.num_parts(); ++part) {
    if (assembly_.hop_needs(part) && assembly_.is_local(part)) assembly_.sample_local(part);
  }
  std::vector<Encoded> replies = exchange.collect();
  for (size_t i = 0; i < replies.size(); ++i) assembly_.take_hop_reply(exchange.part(i), ids[i], bytes_of(replies[i]));
}

ChannelClient& DistributedSampler::channel(int part) {
  if (channels_[part]) return *channels_[part];
  caf::scoped_actor self{system_};
  Encoded offer;
  std::string failure;
  self->request(parts_[part].actor, deadline_, channel_atom::value)
      .receive([&](Encoded& reply) { offer = std::move(reply); },
               [&](caf::error& err) {
                 failure = err == caf::sec::request_timeout
                               ? "no reply within " + std::to_string(deadline_.count()) + " ms"
                               : system_.render(err);
               });
  if (!failure.empty()) throw Error(part_name(part) + ": channel request failed: " + failure);
  DecodedChannelOffer decoded;
  try {
    decoded = decode_channel_offer(bytes_of(offer));
  } catch (const Error& e) {
    throw Error(part_name(part) + ": channel request failed: " + e.what());
  }
  auto client = std::make_unique<ChannelClient>(part_name(part));
  client->open(decoded, static_cast<uint32_t>(part), deadline_);
  channels_[part] = std::move(client);
  return *channels_[part];
}

template <typename Use>
void DistributedSampler::on_channel(int part, Use use) {
  try {
    use(channel(part));
  } catch (const Error&) {
    // The stream is unusable after a failure; the next batch opens a fresh channel (and
    // fails at once if the partition is gone).
    channels_[part].reset();
    throw;
  }
}

void DistributedSampler::fetch_rows() {
  const Rows kinds[] = {Rows::kX, Rows::kY};
  // Requests first, so every remote partition works while the local ones are gathered.
  Exchange<feature_atom> exchange(system_, deadline_, "feature request");
  std::vector<uint64_t> exchange_ids;
  std::vector<Rows> exchange_rows;
  struct Pending {
    int part;
    Rows rows;
    uint64_t id;
  };
  std::vector<Pending> over_channel;
  for (int part = 0; part < assembly_.num_parts(); ++part) {
    if (assembly_.rows_of(part).empty() || assembly_.is_local(part)) continue;
    for (Rows rows : kinds) {
      if (!assembly_.wants(rows)) continue;
      Encoded request;
      const uint64_t id = next_request_id_++;
      assembly_.feature_request(part, rows, id, encoder_, request.bytes);
      if (other_process_[part]) {
        on_channel(part, [&](ChannelClient& c) { c.send(bytes_of(request), deadline_); });
        over_channel.push_back({part, rows, id});
      } else {
        exchange.send(part, parts_[part].actor, std::move(request));
        exchange_ids.push_back(id);
        exchange_rows.push_back(rows);
      }
    }
  }
  for (int part = 0; part < assembly_.num_parts(); ++part) {
    if (assembly_.is_local(part)) assembly_.gather_local(part);
  }
  for (const Pending& p : over_channel) {
    on_channel(p.part, [&](ChannelClient& c) {
      uint64_t body_bytes = 0;
      Span<const char> head = receive_rows_head(c, scratch_, body_bytes, deadline_);
      if (!assembly_.width_known(p.rows)) {
        // No co-located part told the width: the first reply does.
        DecodedFeatureRowsHeader h;
        try {
          h = decode_feature_rows_header(head);
        } catch (const Error& e) {
          throw Error(part_name(p.part) + ": feature request failed: " + e.what());
        }
        const int64_t rows = std::max<int64_t>(h.rows(), 1);
        assembly_.set_width(p.part, p.rows, static_cast<int64_t>(h.bytes / dtype_size(h.dtype)) / rows);
      }
      RowsTarget target = assembly_.rows_target(p.part, p.rows);
      check_rows_header(target, p.id, head, body_bytes);
      receive_rows_body(c, target, scratch_, deadline_);
    });
  }
  std::vector<Encoded> replies = exchange.collect();
  for (size_t i = 0; i < replies.size(); ++i) {
    assembly_.take_feature_reply(exchange.part(i), exchange_rows[i], exchange_ids[i], bytes_of(replies[i]));
  }
}

}  // namespace partita
