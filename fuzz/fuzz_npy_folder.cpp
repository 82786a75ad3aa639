// read_npy_folder on a folder of .npy files and types.json (fuzz_input.h: the input's
// pieces are kNpyFolderFiles, in that order; an empty piece leaves its file out).
#include "fuzz/fuzz_input.h"
#include "partitioner/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto& dir = partita::fuzz::ScratchDir::get();
  const std::string& folder = dir.write_files(partita::fuzz::as_text(data, size), partita::fuzz::kNpyFolderFiles);
  try {
    partita::Dataset d = partita::read_npy_folder(folder);
    d.validate();
  } catch (const partita::Error&) {
  }
  return 0;
}
