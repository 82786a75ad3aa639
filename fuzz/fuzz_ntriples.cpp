// read_ntriples on a folder of one N-Triples graph, trainingSet.tsv and testSet.tsv
// (fuzz_input.h: the pieces after the first byte, in that order). The first byte says how
// the graph is stored, so that both of the reader's ways in are fuzzed:
//   0  g.nt, the piece as it is
//   1  g.nt.gz, the piece as it is: zlib's gzip decoder on arbitrary bytes (a plain file
//      named .gz is read through, as gzread does)
//   2  g.nt.gz, the piece gzipped: the text parsers behind a real decompression
//
// The harness gzips in memory with one deflate stream for the whole run (deflateReset per
// input): a gzopen/gzwrite/gzclose per input set up and freed deflate's ~270 KiB of state
// each time, and read the piece back from its file first.
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz/fuzz_input.h"
#include "partitioner/readers.h"

namespace {

using partita::fuzz::kNtriplesFiles;

// `plain` as a gzip file's bytes (level 1, as the harness did with gzopen "wb1").
std::string_view gzipped(std::string_view plain) {
  static z_stream stream = [] {
    z_stream s{};
    // 15 + 16: a 32 KiB window with a gzip header and trailer, as gzopen writes.
    if (deflateInit2(&s, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      std::fprintf(stderr, "fuzz_ntriples: deflateInit2 failed\n");
      std::abort();  // the harness is broken, not the reader
    }
    return s;
  }();
  static std::string out;
  out.resize(deflateBound(&stream, plain.size()) + 32);
  deflateReset(&stream);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  stream.avail_in = static_cast<uInt>(plain.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  if (deflate(&stream, Z_FINISH) != Z_STREAM_END) {
    std::fprintf(stderr, "fuzz_ntriples: deflate did not finish\n");
    std::abort();
  }
  return std::string_view(out.data(), out.size() - stream.avail_out);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0] % 3;
  auto& dir = partita::fuzz::ScratchDir::get();
  std::vector<std::string_view> pieces = partita::fuzz::split_files(partita::fuzz::as_text(data + 1, size - 1));
  // The graph is g.nt or g.nt.gz, never both (the reader wants exactly one).
  std::vector<std::string> names = kNtriplesFiles;
  if (mode != 0) names[0] += ".gz";
  dir.remove(mode != 0 ? kNtriplesFiles[0] : kNtriplesFiles[0] + ".gz");
  if (mode == 2 && !pieces[0].empty()) pieces[0] = gzipped(pieces[0]);
  const std::string& folder = dir.write_files(pieces, names);
  try {
    partita::Dataset d = partita::read_ntriples(folder);
    d.validate();
  } catch (const partita::Error&) {
  }
  return 0;
}
