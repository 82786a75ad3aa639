// An array file (base/array_file.h) opened as a job opens one: mapped (header and size
// checked), its checksum verified, every byte read, then copied into resident memory.
#include "base/array_file.h"
#include "base/resident_array.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace partita;
  auto& dir = fuzz::ScratchDir::get();
  const std::string path = dir.write("a.bin", fuzz::as_text(data, size));
  try {
    MappedArray array(path);
    array.expect_shape({-1});
    const auto* bytes = static_cast<const unsigned char*>(array.raw_data());
    unsigned sum = 0;
    for (size_t i = 0; i < array.data_bytes(); ++i) sum += bytes[i];
    volatile unsigned sink = sum + static_cast<unsigned>(array.num_elements());
    (void)sink;
    array.verify_checksum();
  } catch (const Error&) {
  }
  try {
    ArrayRef resident = load_resident(MappedArray(path));
    volatile size_t n = resident.bytes();
    (void)n;
  } catch (const Error&) {
  }
  return 0;
}
