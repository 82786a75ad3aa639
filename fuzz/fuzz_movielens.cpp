// read_movielens on a folder of movies.csv and ratings.csv (fuzz_input.h: the input's first
// piece is movies.csv, the second ratings.csv).
#include "fuzz/fuzz_input.h"
#include "partitioner/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto& dir = partita::fuzz::ScratchDir::get();
  const std::string& folder = dir.write_files(partita::fuzz::as_text(data, size), partita::fuzz::kMovielensFiles);
  try {
    partita::Dataset d = partita::read_movielens(folder);
    d.validate();
  } catch (const partita::Error&) {
  }
  return 0;
}
