#include "actors/partition_actor.h"

#include <caf/all.hpp>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "actors/feature_channel.h"
#include "base/error.h"
#include "messages/codec.h"
#include "partitioner/partition_stores.h"

namespace partita {

namespace {

// A request rejected with a specific wire code; any other Error is a bad request.
class Rejected : public Error {
 public:
  Rejected(WireErrorCode code, const std::string& what) : Error(what), code(code) {}
  WireErrorCode code;
};

struct PartitionState {
  std::shared_ptr<const Topology> topology;
  std::shared_ptr<const FeatureStore> features;
  SamplerConfig config;
  PartitionActorOptions options;
  // Reused across requests: the encoder's scratch space and the sampled hop keep their
  // capacity, so a steady stream of requests stops allocating for them.
  Encoder encoder;
  HopOutput hop;
  // Opened at the first channel request; destroyed (sessions stopped and joined) with the
  // state when the actor ends.
  std::unique_ptr<ChannelServer> channels;

  static inline const char* name = "partita.partition";
};

using PartitionPointer = partition_actor::stateful_pointer<PartitionState>;

Span<const char> bytes_of(const Encoded& message) {
  return Span<const char>(message.bytes.data(), message.bytes.size());
}

std::string part_label(int part) { return "partition " + std::to_string(part); }

std::string range_text(int64_t begin, int64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

void answer_hop(PartitionState& s, Span<const char> request, std::vector<char>& reply) {
  DecodedHopRequest r = decode_hop_request(request);
  const Topology& t = *s.topology;
  if (r.config_fingerprint != s.config.fingerprint()) {
    throw Rejected(WireErrorCode::kBadRequest,
                   "hop request: the sampler's config (fanouts, modes) differs from partition " +
                       std::to_string(t.part()) + "'s; its batches would not be the reference's");
  }
  for (int64_t node : r.input.nodes) {
    if (!t.owns(node)) {
      throw Rejected(WireErrorCode::kOutOfRange,
                     "hop request: node " + std::to_string(node) + " is not in partition " +
                         std::to_string(t.part()) + " " + range_text(t.node_begin(), t.node_end()));
    }
  }
  sample_hop(t, s.config, r.key, r.hop, r.input, s.hop);
  s.encoder.hop_reply(r.request_id, s.hop, reply);
}

// A validated feature request: the attribute exists and the reply stays within its limit.
struct FeatureQuery {
  DecodedFeatureRequest request;
  const ArrayRef* array;
  std::vector<int64_t> shape;  // of the reply's rows
};

FeatureQuery check_features(const FeatureStore& store, int part, Span<const char> request) {
  FeatureQuery q{decode_feature_request(request), nullptr, {}};
  const DecodedFeatureRequest& r = q.request;
  const ArrayRef* array = store.get(r.group, r.name);
  if (array == nullptr) {
    throw Rejected(WireErrorCode::kNotFound, "feature request: partition " + std::to_string(part) +
                                                 " has no attribute '" + r.group + "/" + r.name + "'");
  }
  // One request must not make the partition allocate without bound: a reply is at most
  // kMaxReplyBytes (a batch's features are tens of MB; the wire splits larger tensors).
  constexpr size_t kMaxReplyBytes = size_t{1} << 30;
  if (array->row_bytes() > 0 && r.ids.size() > kMaxReplyBytes / array->row_bytes()) {
    throw Rejected(WireErrorCode::kBadRequest,
                   "feature request: " + std::to_string(r.ids.size()) + " rows of " +
                       std::to_string(array->row_bytes()) + " bytes exceed the 1 GiB reply limit");
  }
  q.array = array;
  q.shape = array->shape();
  if (q.shape.empty()) q.shape.push_back(0);
  q.shape[0] = static_cast<int64_t>(r.ids.size());
  return q;
}

// Writes the reply at the start of `buffer`, which only grows; returns its length.
size_t write_features(const FeatureStore& store, int part, Span<const char> request, Encoder& encoder,
                      std::vector<char>& buffer) {
  const FeatureQuery q = check_features(store, part, request);
  const DecodedFeatureRequest& r = q.request;
  const ArrayRef* array = q.array;
  // The rows are gathered straight into the message, after its head: no copy of them.
  std::vector<char> head;
  const size_t padding = encoder.feature_reply_head(r.request_id, array->dtype(), q.shape, head);
  const size_t rows = r.ids.size() * array->row_bytes();
  const size_t length = head.size() + rows + padding;
  if (buffer.size() < length) buffer.resize(length);
  std::memcpy(buffer.data(), head.data(), head.size());
  try {
    store.gather(r.group, r.name, r.ids, buffer.data() + head.size(), rows);
  } catch (const Error& e) {
    // The attribute exists and the buffer fits it, so only an id can be wrong.
    throw Rejected(WireErrorCode::kOutOfRange, std::string("feature request: ") + e.what());
  }
  std::memset(buffer.data() + head.size() + rows, 0, padding);
  return length;
}

// The channel's answer: a rows header, then the rows as the body, gathered piece by piece
// as the session sends them (ChannelReply::fill). (Handing the kernel the rows where they
// lie in the store, one iovec per row, cost about 3x the CPU: its copy loop does not
// overlap the misses of random 512-byte rows the way the store's gather does.)
void write_feature_frames(const FeatureStore& store, int part, Span<const char> request, Encoder& encoder,
                          ChannelReply& reply) {
  const FeatureQuery q = check_features(store, part, request);
  const DecodedFeatureRequest& r = q.request;
  const size_t row_bytes = q.array->row_bytes();
  const Span<const int64_t> ids = r.ids;  // views into the session's request, kept until the next
  const std::string group = r.group, name = r.name;
  if (group == "node") {
    // Every id is checked before the head goes out: after it, all the rows must follow.
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < store.node_begin() || ids[i] >= store.node_end()) {
        throw Rejected(WireErrorCode::kOutOfRange,
                       "feature request: node " + std::to_string(ids[i]) + " (at " + std::to_string(i) +
                           ") is outside partition " + std::to_string(part) + "'s range " +
                           range_text(store.node_begin(), store.node_end()));
      }
    }
    reply.fill = [&store, ids, group, name, row_bytes](char* piece, uint64_t offset, uint64_t bytes) {
      store.gather(group, name, ids.subspan(offset / row_bytes, bytes / row_bytes), piece, bytes);
    };
  } else {
    // Other groups have other row spaces: gather (and check) all rows first.
    const size_t bytes = ids.size() * row_bytes;
    if (reply.storage.size() < bytes) reply.storage.resize(bytes);
    try {
      store.gather(group, name, ids, reply.storage.data(), bytes);
    } catch (const Error& e) {
      throw Rejected(WireErrorCode::kOutOfRange, std::string("feature request: ") + e.what());
    }
    const char* rows = reply.storage.data();
    reply.fill = [rows](char* piece, uint64_t offset, uint64_t bytes) { std::memcpy(piece, rows + offset, bytes); };
  }
  reply.body_bytes = ids.size() * row_bytes;
  reply.body_unit = std::max<size_t>(row_bytes, 1);
  encoder.feature_rows_header(r.request_id, q.array->dtype(), q.shape, reply.head);
  reply.head_length = reply.head.size();
}

// Runs `answer`, which writes its reply at the start of `buffer` and returns its length,
// turning any failure into an error reply there: a partition never dies of a request,
// since its samplers could not tell a crash from a lost machine.
template <typename Answer>
size_t serve(int part, Span<const char> request, Encoder& encoder, std::vector<char>& buffer, Answer answer) {
  WireErrorCode code = WireErrorCode::kBadRequest;
  std::string message;
  try {
    return answer();
  } catch (const Rejected& e) {
    code = e.code;
    message = e.what();
  } catch (const Error& e) {
    message = e.what();
  } catch (const std::exception& e) {
    code = WireErrorCode::kInternal;
    message = std::string("partition ") + std::to_string(part) + ": " + e.what();
  }
  uint64_t id = 0;
  try {
    id = peek_message(request).request_id;
  } catch (const Error&) {
    // No readable request id: the reply carries 0.
  }
  std::vector<char> error;
  encoder.error_reply(id, code, message, error);
  if (buffer.size() < error.size()) buffer.resize(error.size());
  std::memcpy(buffer.data(), error.data(), error.size());
  return error.size();
}

// A feature message's answer, at the start of `buffer` (grown as needed); returns its length.
size_t answer_feature_request(const FeatureStore& features, int part, Span<const char> request, Encoder& encoder,
                              std::vector<char>& buffer) {
  return serve(part, request, encoder, buffer, [&] { return write_features(features, part, request, encoder, buffer); });
}

// A channel request: a session of the feature channel for one more client.
void answer_channel(PartitionState& s, std::vector<char>& reply) {
  const int part = s.topology->part();
  if (!s.channels) {
    std::shared_ptr<const FeatureStore> features = s.features;
    s.channels = std::make_unique<ChannelServer>(
        s.options.channel_host, static_cast<uint32_t>(part),
        [features, part]() -> ChannelHandler {
          auto encoder = std::make_shared<Encoder>();  // one per session, as Encoder wants
          return [features, part, encoder](Span<const char> request, ChannelReply& reply) {
            // A failure becomes an error reply as the head, with an empty body.
            bool answered = false;
            reply.head_length = serve(part, request, *encoder, reply.head, [&] {
              write_feature_frames(*features, part, request, *encoder, reply);
              answered = true;
              return reply.head_length;
            });
            if (!answered) reply.fill = nullptr;
          };
        },
        s.options.channel_deadline, part_label(part));
  }
  DecodedChannelOffer offer;
  try {
    offer = s.channels->open();
  } catch (const Error& e) {
    throw Rejected(WireErrorCode::kInternal, std::string("channel request: ") + e.what());
  }
  s.encoder.channel_offer(offer.host, offer.port, offer.token, offer.client, reply);
}

partition_actor::behavior_type partition(PartitionPointer self, std::shared_ptr<const Topology> topology,
                                         std::shared_ptr<const FeatureStore> features, SamplerConfig config,
                                         PartitionActorOptions options) {
  self->state.topology = std::move(topology);
  self->state.features = std::move(features);
  self->state.config = std::move(config);
  self->state.options = std::move(options);
  return {
      [self](hop_atom, const Encoded& request) {
        auto& s = self->state;
        Encoded reply;
        reply.bytes.resize(serve(s.topology->part(), bytes_of(request), s.encoder, reply.bytes, [&] {
          answer_hop(s, bytes_of(request), reply.bytes);
          return reply.bytes.size();
        }));
        return reply;
      },
      [self](feature_atom, const Encoded& request) {
        auto& s = self->state;
        Encoded reply;  // a fresh buffer: the message takes it along
        reply.bytes.resize(
            answer_feature_request(*s.features, s.topology->part(), bytes_of(request), s.encoder, reply.bytes));
        return reply;
      },
      [self](channel_atom) {
        auto& s = self->state;
        Encoded reply;
        reply.bytes.resize(serve(s.topology->part(), {}, s.encoder, reply.bytes, [&] {
          answer_channel(s, reply.bytes);
          return reply.bytes.size();
        }));
        return reply;
      },
  };
}

}  // namespace

partition_actor spawn_partition_actor(caf::actor_system& system, std::shared_ptr<const Topology> topology,
                                      std::shared_ptr<const FeatureStore> features, SamplerConfig config,
                                      PartitionActorOptions options) {
  if (!topology || !features) throw UsageError("partition actor: a topology and a feature store are required");
  config.order_by_time(*topology);
  config.validate(*topology);
  return system.spawn(partition, std::move(topology), std::move(features), std::move(config), std::move(options));
}

}  // namespace partita
