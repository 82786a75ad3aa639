// parse_meta_json on one META.json file (a partition folder's description).
#include "fuzz/fuzz_input.h"
#include "partitioner/meta_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto& dir = partita::fuzz::ScratchDir::get();
  const std::string path = dir.write("META.json", partita::fuzz::as_text(data, size));
  try {
    partita::PartitionMeta meta = partita::parse_meta_json(path);
    volatile int parts = meta.num_parts;
    (void)parts;
  } catch (const partita::Error&) {
  }
  return 0;
}
