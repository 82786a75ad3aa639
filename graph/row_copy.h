// Copying fixed-width rows between scattered places: the one kernel behind a feature
// store's gather (rows picked by id, into a contiguous buffer) and a batch's row placement
// (a partition's rows, contiguous or picked by id, to their positions in the batch).
//
// Its cases, chosen per call by row width, destination layout and size:
//   contiguous destination (a gather):
//     1-, 4-, 8-byte rows: a fixed-size memcpy per row (one load, one store);
//     rows of 64 bytes or more, 16 MiB or more in all, x86-64: whole output lines by
//       streaming stores, a line shared by two rows assembled on the stack;
//     otherwise a memcpy per row;
//   scattered destination (a placement):
//     rows of 128 bytes or more, 1 MiB or more in all, x86-64: the whole lines inside each
//       destination row by streaming stores, its partial end lines plainly (measured on
//       512-byte rows placed into a 29 MB batch: about twice as fast as a memcpy per row,
//       which first reads every line it overwrites);
//     otherwise a memcpy per row.
// Below those sizes the rows stay in cache for whoever reads them next, and streaming
// stores, which bypass the cache, would only lose.
//
// Rows picked by id are prefetched kPrefetchRows ids ahead, every line of the row: a random
// row's lines miss all caches, and the core alone keeps only the misses of the next row or
// two in flight. Measured with `partita bench gather --prefetch-sweep` (BENCHMARKS.md,
// "Neighbour sampling"), 512-byte rows from huge-page memory, one thread: 0.47-0.52 of
// memcpy without prefetch, 0.59-0.71 at 8 rows ahead, no better at 16 or 32 and worse at 2
// or 4. (An earlier measurement found no gain: the prefetch loop, then bounded by a pointer
// to the row's end, was compiled away by GCC 12; it is now a counted loop of prefetch
// instructions, checked by looking at the object code.)
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
  // Whether a copy large enough may write by streaming stores (false: plain stores always,
  // as `partita bench gather` compares).
  bool streaming = true;

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
