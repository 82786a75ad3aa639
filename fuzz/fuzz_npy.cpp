// read_npy, read_npy_header, read_npy_into and read_npy_as on one .npy file.
#include <algorithm>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "partitioner/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace partita;
  auto& dir = fuzz::ScratchDir::get();
  const std::string path = dir.write("a.npy", fuzz::as_text(data, size));
  try {
    NpyArray a = read_npy(path);
    volatile int64_t n = a.num_elements();
    (void)n;
  } catch (const Error&) {
  }
  try {
    NpyHeader h = read_npy_header(path);
    // A range at the end of the data, as the partitioner reads pieces of large arrays.
    const int64_t count = std::min<int64_t>(h.num_elements(), 64);
    std::vector<char> dst(static_cast<size_t>(count) * dtype_size(h.dtype));
    read_npy_into(path, h, h.num_elements() - count, count, dst.data());
    // Converted as the folder reader converts ids and features.
    volatile size_t got = read_npy_as<int64_t>(path, h, 0, count).size() + read_npy_as<float>(path, h, 0, count).size();
    (void)got;
  } catch (const Error&) {
  }
  return 0;
}
