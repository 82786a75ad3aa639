// Copying fixed-width rows between scattered places: the one kernel behind a feature
// store's gather (rows picked by id, into a contiguous buffer) and a batch's row placement
// (a partition's rows, contiguous or picked by id, to their positions in the batch).
//
// Its cases, chosen per call by row width, destination layout and size:
//   contiguous destination (a gather):
//     1-, 4-, 8-byte rows: a fixed-size memcpy per row (one load, one store);
//     rows of 64 bytes or more, 16 MiB or more in all, AVX-512 BW: whole output lines by
//       streaming stores, a line shared by two rows assembled with masked loads (measured
//       on 512-byte rows, bench/gather_bench.h: 0.75-0.8 of memcpy's bandwidth against
//       0.55-0.6 for a memcpy per row);
//     otherwise a memcpy per row;
//   scattered destination (a placement):
//     rows of 128 bytes or more, 1 MiB or more in all, AVX-512: the whole lines inside each
//       destination row by streaming stores, its partial end lines plainly (measured on
//       512-byte rows placed into a 29 MB batch: about twice as fast as a memcpy per row,
//       which first reads every line it overwrites);
//     otherwise a memcpy per row.
// Below those sizes the rows stay in cache for whoever reads them next, and streaming
// stores, which bypass the cache, would only lose.
//
// No software prefetch: prefetching rows a few ids ahead (distances 4 to 64, first line or
// whole row, T0/T1/T2 hints) gained nothing in the plain cases, whose misses the
// out-of-order core already overlaps as far as the fill buffers allow, and cost 0.05-0.1 of
// memcpy's bandwidth in the streaming one.
#pragma once

#include <cstddef>
#include <cstdint>

namespace partita {

// Rows ahead whose lines a copy by id prefetches (see the header's comment).
constexpr size_t kPrefetchRows = 8;

// Where rows come from: row k is data + (ids[k] - begin) * row_bytes, or
// data + k * row_bytes without ids. With ids, an id is in range when ids[k] - begin
// (unsigned) is below `rows`: one compare per id, which also catches ids below begin.
struct RowSource {
  const char* data = nullptr;
  size_t row_bytes = 0;
  const int64_t* ids = nullptr;
  uint64_t begin = 0;
  uint64_t rows = UINT64_MAX;
  // With ids: rows picked this many ids ahead have all their lines prefetched (0: none).
  size_t prefetch_rows = kPrefetchRows;

  // Row k, or nullptr when its id is out of range.
  const char* row(size_t k) const {
    if (ids == nullptr) return data + k * row_bytes;
    const uint64_t r = static_cast<uint64_t>(ids[k]) - begin;
    return r < rows ? data + r * row_bytes : nullptr;
  }
};

// Copies rows [0, n) of `from` to `out`: row k to out + k * row_bytes when positions is
// null, else to out + positions[k] * row_bytes. Stops at the first row whose id is out of
// range and returns its k (n when all are in range). `total_bytes`, when larger than this
// call's n * row_bytes, is the size of the whole copy this call is a slice of: it decides,
// with n * row_bytes, whether the rows would stay in cache anyway. Streaming stores are
// fenced before it returns, so the rows are visible to whoever synchronises with this
// thread next, as plain stores would be.
size_t copy_rows(const RowSource& from, const int64_t* positions, size_t n, char* out, size_t total_bytes = 0);

}  // namespace partita
