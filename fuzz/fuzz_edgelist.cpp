// read_edgelist on one text file.
#include "fuzz/fuzz_input.h"
#include "partitioner/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto& dir = partita::fuzz::ScratchDir::get();
  const std::string path = dir.write("graph.txt", partita::fuzz::as_text(data, size));
  try {
    partita::Dataset d = partita::read_edgelist(path);
    d.validate();
  } catch (const partita::Error&) {
  }
  return 0;
}
