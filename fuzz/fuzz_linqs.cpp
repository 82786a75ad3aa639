// read_linqs on a folder of two files, g.content and g.cites (fuzz_input.h: the input's
// first piece is the .content file, the second the .cites file).
#include "fuzz/fuzz_input.h"
#include "partitioner/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto& dir = partita::fuzz::ScratchDir::get();
  const std::string& folder = dir.write_files(partita::fuzz::as_text(data, size), partita::fuzz::kLinqsFiles);
  try {
    partita::Dataset d = partita::read_linqs(folder);
    d.validate();
  } catch (const partita::Error&) {
  }
  return 0;
}
