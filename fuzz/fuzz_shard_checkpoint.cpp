// EmbeddingShard::load (embeddings/embedding_shard.h): a shard's checkpoint, in the form
// fuzz/shard_harness.h describes, loaded into the shard the input's first byte chooses. A
// checkpoint it takes must be one it could have written: saved again, a version-2
// checkpoint gives its own bytes back; and the loaded shard still trains (one step, one
// read of every row). Refusals are partita::Error, as the loader promises.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/checksum.h"
#include "base/error.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/shard_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace partita;
  if (size < 2) return 0;
  const std::unique_ptr<EmbeddingShard> shard = fuzz::make_shard(data[0]);
  const bool fix_checksum = data[1] & 1;
  std::vector<char> bytes(reinterpret_cast<const char*>(data) + 2, reinterpret_cast<const char*>(data) + size);
  constexpr size_t kEnvelope = 16;  // magic, checksum
  if (fix_checksum && bytes.size() >= kEnvelope) {
    const uint64_t sum = checksum(bytes.data() + kEnvelope, bytes.size() - kEnvelope);
    std::memcpy(bytes.data() + 8, &sum, sizeof(sum));
  }
  try {
    shard->load(bytes);
  } catch (const Error&) {
    return 0;
  }
  const std::chrono::milliseconds wait(0);
  const bool v2 = bytes.size() >= 8 && std::memcmp(bytes.data(), "PTSHARD2", 8) == 0;
  if (v2 && shard->save(wait) != bytes) std::abort();
  const EmbeddingShardConfig& config = shard->config();
  std::vector<int64_t> ids;
  for (int64_t id = config.begin; id < config.end; ++id) ids.push_back(id);
  std::vector<float> rows(ids.size() * static_cast<size_t>(config.dim), 0.25f);
  for (int t = 0; t < config.num_trainers; ++t) shard->push(t, Span<const int64_t>(ids), Span<const float>(rows));
  shard->read(0, Span<const int64_t>(ids), rows.data(), wait);
  return 0;
}
