// A sampled mini-batch as a sampler actor hands it to its trainer: the reply to `next`.
//
// In one process the batch is handed over by move: CAF 0.17 does not serialise messages
// between actors of one actor system, so only the pointer travels, and the trainer takes
// the batch out of it (tens of MB of features are never copied). When the reply crosses a
// process boundary, CAF serialises it through inspect() below, which writes it as one
// Cap'n Proto message (the codec's mini_batch, or its error reply when the sampler failed):
// the same validated decoder as every other protocol message reads it on arrival, and a
// malformed one becomes a failed SampledBatch naming the problem, never a crash.
#pragma once

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "graph/buffer_pool.h"
#include "graph/mini_batch.h"
#include "graph/hop_sampler.h"
#include "messages/caf_types.h"
#include "messages/codec.h"

namespace partita {

struct SampledBatch {
  // The batch; null when the sampler could not give one (`error` says why).
  std::shared_ptr<MiniBatch> batch;
  SampleKey key;
  WireErrorCode code = WireErrorCode::kUnknown;
  std::string error;
  // In the sampler's process only (never serialised): where the consumer gives the
  // feature buffer back once done with it (graph/buffer_pool.h).
  std::shared_ptr<BufferPool> pool;

  static SampledBatch of(MiniBatch batch, const SampleKey& key);
  static SampledBatch failed(WireErrorCode code, std::string error);
  bool ok() const { return batch != nullptr; }
};

// The Cap'n Proto bytes of `x` (a mini-batch message or an error reply), and back. Decoding
// never throws: bytes that are not a valid batch give a failed SampledBatch naming why.
void encode_sampled_batch(const SampledBatch& x, std::vector<char>& out);
SampledBatch decode_sampled_batch(const std::vector<char>& bytes);

template <class Inspector>
typename std::enable_if<Inspector::reads_state, typename Inspector::result_type>::type inspect(
    Inspector& f, SampledBatch& x) {
  std::vector<char> bytes;
  encode_sampled_batch(x, bytes);
  return inspect_bytes(f, "partita.SampledBatch", bytes);
}

template <class Inspector>
typename std::enable_if<Inspector::writes_state, typename Inspector::result_type>::type inspect(
    Inspector& f, SampledBatch& x) {
  std::vector<char> bytes;
  auto result = inspect_bytes(f, "partita.SampledBatch", bytes);
  x = decode_sampled_batch(bytes);
  return result;
}

}  // namespace partita
