#include "actors/partition_actor.h"

#include <caf/all.hpp>

#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "messages/codec.h"

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
  // Reused across requests: the encoder's scratch space, the sampled hop and gathered rows
  // keep their capacity, so a steady stream of requests stops allocating for them.
  Encoder encoder;
  HopOutput hop;
  std::vector<char> rows;

  static inline const char* name = "partita.partition";
};

using PartitionPointer = partition_actor::stateful_pointer<PartitionState>;

Span<const char> bytes_of(const Encoded& message) {
  return Span<const char>(message.bytes.data(), message.bytes.size());
}

std::string range_text(int64_t begin, int64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

void answer_hop(PartitionState& s, const Encoded& request, Encoded& reply) {
  DecodedHopRequest r = decode_hop_request(bytes_of(request));
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
  s.encoder.hop_reply(r.request_id, s.hop, reply.bytes);
}

void answer_features(PartitionState& s, const Encoded& request, Encoded& reply) {
  DecodedFeatureRequest r = decode_feature_request(bytes_of(request));
  const FeatureStore& store = *s.features;
  const ArrayRef* array = store.get(r.group, r.name);
  if (array == nullptr) {
    throw Rejected(WireErrorCode::kNotFound, "feature request: partition " +
                                                 std::to_string(s.topology->part()) +
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
  s.rows.resize(r.ids.size() * array->row_bytes());
  try {
    store.gather(r.group, r.name, r.ids, s.rows.data(), s.rows.size());
  } catch (const Error& e) {
    // The attribute exists and the buffer fits it, so only an id can be wrong.
    throw Rejected(WireErrorCode::kOutOfRange, std::string("feature request: ") + e.what());
  }
  std::vector<int64_t> shape = array->shape();
  if (shape.empty()) shape.push_back(0);
  shape[0] = static_cast<int64_t>(r.ids.size());
  s.encoder.feature_reply(r.request_id, TensorView(array->dtype(), std::move(shape), s.rows.data(), s.rows.size()),
                          reply.bytes);
}

// Runs `answer`, turning any failure into an error reply: a partition actor never dies of
// a request, since its samplers could not tell a crash from a lost machine.
template <typename Answer>
Encoded serve(PartitionState& s, const Encoded& request, Answer answer) {
  Encoded reply;
  WireErrorCode code = WireErrorCode::kBadRequest;
  std::string message;
  try {
    answer(s, request, reply);
    return reply;
  } catch (const Rejected& e) {
    code = e.code;
    message = e.what();
  } catch (const Error& e) {
    message = e.what();
  } catch (const std::exception& e) {
    code = WireErrorCode::kInternal;
    message = std::string("partition ") + std::to_string(s.topology->part()) + ": " + e.what();
  }
  uint64_t id = 0;
  try {
    id = peek_message(bytes_of(request)).request_id;
  } catch (const Error&) {
    // No readable request id: the reply carries 0.
  }
  s.encoder.error_reply(id, code, message, reply.bytes);
  return reply;
}

partition_actor::behavior_type partition(PartitionPointer self, std::shared_ptr<const Topology> topology,
                                         std::shared_ptr<const FeatureStore> features, SamplerConfig config) {
  self->state.topology = std::move(topology);
  self->state.features = std::move(features);
  self->state.config = std::move(config);
  return {
      [self](hop_atom, const Encoded& request) { return serve(self->state, request, answer_hop); },
      [self](feature_atom, const Encoded& request) { return serve(self->state, request, answer_features); },
  };
}

}  // namespace

partition_actor spawn_partition_actor(caf::actor_system& system, std::shared_ptr<const Topology> topology,
                                      std::shared_ptr<const FeatureStore> features, SamplerConfig config) {
  if (!topology || !features) throw UsageError("partition actor: a topology and a feature store are required");
  config.validate(*topology);
  return system.spawn(partition, std::move(topology), std::move(features), std::move(config));
}

}  // namespace partita
