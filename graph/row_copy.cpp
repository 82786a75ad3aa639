#include "graph/row_copy.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace partita {

namespace {

// Above this much output a gather's rows will not stay in cache for the consumer anyway.
constexpr size_t kGatherStreamMinBytes = size_t{16} << 20;
// The same for a placement: its rows land all over a batch of tens of MB.
constexpr size_t kPlaceStreamMinBytes = size_t{1} << 20;

// -- Prefetch ------------------------------------------------------------------------------

// Asks for every cache line of row k of `from` (picked by id), if k is a row and its id is
// in range; a prefetch never faults, and a row out of range is not asked for. (Written as
// a counted loop of prefetch instructions: GCC 12 drops a __builtin_prefetch loop bounded
// by the row's end as if it had no effect.)
inline void prefetch_row(const RowSource& from, size_t k, size_t n) {
  if (k >= n) return;
  const uint64_t r = static_cast<uint64_t>(from.ids[k]) - from.begin;
  if (r >= from.rows) return;
  const char* row = from.data + r * from.row_bytes;
  const char* first = row - reinterpret_cast<uintptr_t>(row) % 64;
  const size_t lines = static_cast<size_t>(row + from.row_bytes - first + 63) / 64;
  for (size_t line = 0; line < lines; ++line) {
#if defined(__x86_64__)
    asm volatile("prefetcht0 %0" : : "m"(first[line * 64]));
#else
    __builtin_prefetch(first + line * 64, 0, 3);
#endif
  }
}

// -- Contiguous destination ---------------------------------------------------------------

template <size_t kRowBytes>
size_t gather_fixed(const RowSource& from, size_t n, char* out) {
  for (size_t k = 0; k < n; ++k) {
    const char* row = from.row(k);
    if (row == nullptr) return k;
    std::memcpy(out + k * kRowBytes, row, kRowBytes);
  }
  return n;
}

size_t gather_wide(const RowSource& from, size_t n, char* out) {
  const size_t row_bytes = from.row_bytes;
  const size_t ahead = from.ids == nullptr ? 0 : from.prefetch_rows;
  for (size_t k = 0; k < ahead; ++k) prefetch_row(from, k, n);
  for (size_t k = 0; k < n; ++k) {
    if (ahead) prefetch_row(from, k + ahead, n);
    const char* row = from.row(k);
    if (row == nullptr) return k;
    std::memcpy(out + k * row_bytes, row, row_bytes);
  }
  return n;
}

#if defined(__x86_64__)
char* align_down(char* p) { return p - reinterpret_cast<uintptr_t>(p) % 64; }
char* align_up(char* p) { return align_down(p + 63); }

// One whole 64-byte output line from 64 bytes at `from` (any alignment) by streaming stores.
// SSE2's 16-byte streams, which every x86-64 CPU has: the four stores of a line go out
// back to back and fill one write-combining buffer, so the line leaves as one write, as a
// single 64-byte AVX-512 store would (the loop is bound by the random row reads, not by
// instructions: 8 per line against ~20 cycles of memory time per line).
[[gnu::always_inline]] inline void stream_line(char* line, const char* from) {
  const auto* in = reinterpret_cast<const __m128i*>(from);
  const __m128i a = _mm_loadu_si128(in), b = _mm_loadu_si128(in + 1), c = _mm_loadu_si128(in + 2),
                d = _mm_loadu_si128(in + 3);
  auto* out = reinterpret_cast<__m128i*>(line);
  _mm_stream_si128(out, a);
  _mm_stream_si128(out + 1, b);
  _mm_stream_si128(out + 2, c);
  _mm_stream_si128(out + 3, d);
}

// Whole output lines by streaming stores: no line is read before being overwritten (no
// read-for-ownership), which frees memory bandwidth and fill buffers for the random row
// reads. Wherever a row ends inside a line, that line is assembled in a 64-byte buffer on
// the stack from the end of the row and the start of the next, so any row size and any
// output alignment stream whole lines. (Assembling it with masked loads from `next - tail`
// measured 0.47-0.57 of memcpy into a buffer 16 bytes off alignment, against 0.72-0.73
// this way, in a stand-alone test of both: a masked load still fetches the line before
// `next`, another row's, one more random miss per row. Streaming only the lines inside each
// row and storing the partial ones plainly gained nothing.) Only the slice's first and last
// partial lines, which it may share with a neighbouring slice, use plain stores.
size_t gather_streaming(const RowSource& from, size_t n, char* out) {
  if (n == 0) return 0;
  const size_t row_bytes = from.row_bytes;
  const size_t ahead = from.ids == nullptr ? 0 : from.prefetch_rows;
  for (size_t k = 0; k < ahead; ++k) prefetch_row(from, k, n);
  const char* row = from.row(0);
  if (row == nullptr) return 0;
  std::memcpy(out, row, static_cast<size_t>(align_up(out) - out));
  for (size_t k = 0;; ++k) {
    if (ahead) prefetch_row(from, k + ahead, n);
    char* to = out + k * row_bytes;
    char* lines_end = align_down(to + row_bytes);
    for (char* line = align_up(to); line < lines_end; line += 64) stream_line(line, row + (line - to));
    const size_t tail = static_cast<size_t>(to + row_bytes - lines_end);
    const char* next = k + 1 < n ? from.row(k + 1) : nullptr;
    if (next == nullptr) {  // the last row, or the next id is out of range
      std::memcpy(lines_end, row + row_bytes - tail, tail);
      _mm_sfence();
      return k + 1;
    }
    if (tail != 0) {
      // Bytes [0, tail) of the line from this row, the rest from the start of the next.
      alignas(64) char line[64];
      std::memcpy(line, row + row_bytes - tail, tail);
      std::memcpy(line + tail, next, 64 - tail);
      stream_line(lines_end, line);
    }
    row = next;
  }
}
#endif

size_t gather(const RowSource& from, size_t n, char* out, size_t total_bytes) {
  switch (from.row_bytes) {
    case 1:
      return gather_fixed<1>(from, n, out);
    case 4:
      return gather_fixed<4>(from, n, out);
    case 8:
      return gather_fixed<8>(from, n, out);
    default:
      break;
  }
#if defined(__x86_64__)
  // From 64 bytes on, a line holds parts of at most two rows.
  if (from.streaming && from.row_bytes >= 64 && total_bytes >= kGatherStreamMinBytes) {
    return gather_streaming(from, n, out);
  }
#else
  (void)total_bytes;
#endif
  return gather_wide(from, n, out);
}

// -- Scattered destination ----------------------------------------------------------------

size_t place_plain(const RowSource& from, const int64_t* positions, size_t n, char* out) {
  const size_t row_bytes = from.row_bytes;
  const size_t ahead = from.ids == nullptr ? 0 : from.prefetch_rows;
  for (size_t k = 0; k < ahead; ++k) prefetch_row(from, k, n);
  for (size_t k = 0; k < n; ++k) {
    if (ahead) prefetch_row(from, k + ahead, n);
    const char* row = from.row(k);
    if (row == nullptr) return k;
    std::memcpy(out + static_cast<size_t>(positions[k]) * row_bytes, row, row_bytes);
  }
  return n;
}

#if defined(__x86_64__)
// The whole 64-byte lines of each destination row by streaming stores; the partial lines
// at either end of a row (batch buffers are not 64-byte aligned) by plain stores, since
// the neighbouring rows that share them are written at other times.
size_t place_streaming(const RowSource& from, const int64_t* positions, size_t n, char* out) {
  const size_t row_bytes = from.row_bytes;
  const size_t ahead = from.ids == nullptr ? 0 : from.prefetch_rows;
  for (size_t j = 0; j < ahead; ++j) prefetch_row(from, j, n);
  size_t k = 0;
  for (; k < n; ++k) {
    if (ahead) prefetch_row(from, k + ahead, n);
    const char* row = from.row(k);
    if (row == nullptr) break;
    char* to = out + static_cast<size_t>(positions[k]) * row_bytes;
    char* lines = align_up(to);
    char* lines_end = align_down(to + row_bytes);
    std::memcpy(to, row, static_cast<size_t>(lines - to));
    for (char* line = lines; line < lines_end; line += 64) stream_line(line, row + (line - to));
    std::memcpy(lines_end, row + (lines_end - to), static_cast<size_t>(to + row_bytes - lines_end));
  }
  _mm_sfence();
  return k;
}
#endif

size_t place(const RowSource& from, const int64_t* positions, size_t n, char* out, size_t total_bytes) {
#if defined(__x86_64__)
  // Rows wide enough to hold whole lines, and enough of them to overflow the cache anyway.
  if (from.streaming && from.row_bytes >= 128 && total_bytes >= kPlaceStreamMinBytes) {
    return place_streaming(from, positions, n, out);
  }
#else
  (void)total_bytes;
#endif
  return place_plain(from, positions, n, out);
}

}  // namespace

size_t copy_rows(const RowSource& from, const int64_t* positions, size_t n, char* out, size_t total_bytes) {
  total_bytes = std::max(total_bytes, n * from.row_bytes);
  return positions == nullptr ? gather(from, n, out, total_bytes) : place(from, positions, n, out, total_bytes);
}

}  // namespace partita
