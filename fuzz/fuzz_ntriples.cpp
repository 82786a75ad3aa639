// read_ntriples on a folder of one N-Triples graph, trainingSet.tsv and testSet.tsv
// (fuzz_input.h: the pieces after the first byte, in that order). The first byte says how
// the graph is stored, so that both of the reader's ways in are fuzzed:
//   0  g.nt, the piece as it is
//   1  g.nt.gz, the piece as it is: zlib's gzip decoder on arbitrary bytes (a plain file
//      named .gz is read through, as gzread does)
//   2  g.nt.gz, the piece gzipped: the text parsers behind a real decompression
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <string>

#include "fuzz/fuzz_input.h"
#include "partitioner/readers.h"

namespace {

void gzip_file(const std::string& plain, const std::string& gz) {
  std::string text;
  {
    std::ifstream in(plain, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  gzFile out = gzopen(gz.c_str(), "wb1");
  if (out == nullptr || (!text.empty() && gzwrite(out, text.data(), static_cast<unsigned>(text.size())) <= 0) ||
      gzclose(out) != Z_OK) {
    std::fprintf(stderr, "fuzz_ntriples: cannot gzip %s\n", gz.c_str());
    std::abort();  // the harness is broken, not the reader
  }
  std::filesystem::remove(plain);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0] % 3;
  auto& dir = partita::fuzz::ScratchDir::get();
  dir.remove(partita::fuzz::kNtriplesFiles[0] + ".gz");  // the previous input's, if it had one
  const std::string& folder = dir.write_files(partita::fuzz::as_text(data + 1, size - 1), partita::fuzz::kNtriplesFiles);
  const std::string graph = folder + "/" + partita::fuzz::kNtriplesFiles[0];
  if (mode != 0 && std::filesystem::exists(graph)) {
    if (mode == 1) std::filesystem::rename(graph, graph + ".gz");
    if (mode == 2) gzip_file(graph, graph + ".gz");
  }
  try {
    partita::Dataset d = partita::read_ntriples(folder);
    d.validate();
  } catch (const partita::Error&) {
  }
  return 0;
}
