#include "messages/sampled_batch.h"

#include <utility>

namespace partita {

SampledBatch SampledBatch::of(MiniBatch batch, const SampleKey& key) {
  SampledBatch x;
  x.batch = std::make_shared<MiniBatch>(std::move(batch));
  x.key = key;
  return x;
}

SampledBatch SampledBatch::failed(WireErrorCode code, std::string error) {
  SampledBatch x;
  x.code = code;
  x.error = std::move(error);
  return x;
}

void encode_sampled_batch(const SampledBatch& x, std::vector<char>& out) {
  // CAF serialises on its multiplexer thread: one encoder per thread.
  thread_local Encoder encoder;
  if (!x.ok()) {
    encoder.error_reply(0, x.code, x.error, out);
    return;
  }
  try {
    encoder.mini_batch(x.key, *x.batch, out);
  } catch (const Error& e) {
    encoder.error_reply(0, WireErrorCode::kInternal, std::string("batch cannot be encoded: ") + e.what(), out);
  }
}

SampledBatch decode_sampled_batch(const std::vector<char>& bytes) {
  try {
    MiniBatch batch;
    SampleKey key;
    decode_mini_batch(Span<const char>(bytes), batch, &key);
    return SampledBatch::of(std::move(batch), key);
  } catch (const RemoteError& e) {
    return SampledBatch::failed(e.code(), e.what());
  } catch (const Error& e) {
    return SampledBatch::failed(WireErrorCode::kBadRequest, std::string("malformed batch: ") + e.what());
  }
}

}  // namespace partita
