// read_triples on a folder of train.txt, valid.txt and test.txt (fuzz_input.h: the input's
// pieces, in that order).
#include "fuzz/fuzz_input.h"
#include "partitioner/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto& dir = partita::fuzz::ScratchDir::get();
  const std::string& folder =dir.write_files(partita::fuzz::as_text(data, size), partita::fuzz::kTriplesFiles);
  try {
    partita::Dataset d = partita::read_triples(folder);
    d.validate();
  } catch (const partita::Error&) {
  }
  return 0;
}
