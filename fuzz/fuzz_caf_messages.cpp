// The CAF message types Partita registers, as CAF reads them from another process's bytes
// (caf::binary_deserializer, the serialisation of CAF 0.17's middleman): the cluster
// protocol (runtime/cluster/cluster_protocol.h), the encoded protocol messages
// (messages/caf_types.h) and sampled batches, which decode through the codec
// (messages/sampled_batch.h). The input's first byte picks the type.
//
// CAF's own BASP framing, which reads these bytes off the socket, is CAF's code: mutual
// TLS keeps unauthenticated bytes from ever reaching it, so it is not fuzzed here.
#include <caf/binary_deserializer.hpp>

#include "fuzz/fuzz_input.h"
#include "messages/caf_types.h"
#include "messages/sampled_batch.h"
#include "runtime/cluster/cluster_protocol.h"

namespace {

template <class T>
void read_as(const uint8_t* data, size_t size) {
  caf::binary_deserializer source(static_cast<caf::execution_unit*>(nullptr), reinterpret_cast<const char*>(data),
                                  size);
  T value;
  auto failed = source(value);  // a caf::error, empty on success: either is fine
  (void)failed;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace partita;
  if (size == 0) return 0;
  const uint8_t which = data[0] % 7;
  ++data;
  --size;
  try {
    switch (which) {
      case 0: read_as<runtime::NodeInfo>(data, size); break;
      case 1: read_as<runtime::NodeLoad>(data, size); break;
      case 2: read_as<runtime::NodeStatus>(data, size); break;
      case 3: read_as<runtime::JobStatus>(data, size); break;
      case 4: read_as<runtime::ClusterStatus>(data, size); break;
      case 5: read_as<Encoded>(data, size); break;
      case 6: {
        // Never throws: a bad batch becomes a failed SampledBatch naming why.
        read_as<SampledBatch>(data, size);
        break;
      }
    }
  } catch (const Error&) {
  }
  return 0;
}
