#include "graph/feature_store.h"

#include <atomic>
#include <cstring>
#include <string>

#include "base/error.h"
#include "base/parallel.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace partita {

namespace {

// Below this much output a gather is over before a second thread would have started.
constexpr size_t kParallelMinBytes = size_t{1} << 20;
// Above this much output the rows will not stay in cache for the consumer anyway, so
// streaming stores, which skip reading every output line before overwriting it, only win.
constexpr size_t kStreamMinBytes = size_t{16} << 20;

const char* space_name(RowSpace space) { return space == RowSpace::kNode ? "node" : "edge"; }

std::string key_name(const std::string& group, const std::string& name) {
  return group + "/" + name;
}

std::string range_text(int64_t begin, int64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

// Where a gather's rows come from. An id is in range when the unsigned difference
// id - begin is below rows: one compare per id, which also catches ids below begin.
struct RowSource {
  const char* data;
  size_t row_bytes;
  uint64_t begin;
  uint64_t rows;

  // The row of `id`, or nullptr when the id is out of range.
  const char* row_data(int64_t id) const {
    uint64_t row = static_cast<uint64_t>(id) - begin;
    return row < rows ? data + row * row_bytes : nullptr;
  }
};

// A kernel copies the rows of ids[0, n) to out and returns the position of the first id
// out of range, or n. Validation lives in the copy loop, where the id is loaded anyway.
//
// No software prefetch: prefetching rows a few ids ahead (distances 4 to 64, first line or
// whole row, T0/T1/T2 hints) gained nothing in the plain kernels, whose misses the
// out-of-order core already overlaps as far as the fill buffers allow, and cost 0.05-0.1 of
// memcpy's bandwidth in the streaming one.
using GatherKernel = size_t (*)(const RowSource&, const int64_t*, size_t, char*);

// Narrow rows (labels, timestamps, scalar attributes): a constant-size memcpy compiles to
// one load and one store, whatever the alignment of either side.
template <size_t kRowBytes>
size_t gather_fixed(const RowSource& src, const int64_t* ids, size_t n, char* out) {
  for (size_t i = 0; i < n; ++i) {
    const char* from = src.row_data(ids[i]);
    if (from == nullptr) return i;
    std::memcpy(out + i * kRowBytes, from, kRowBytes);
  }
  return n;
}

size_t gather_wide(const RowSource& src, const int64_t* ids, size_t n, char* out) {
  const size_t row_bytes = src.row_bytes;
  for (size_t i = 0; i < n; ++i) {
    const char* from = src.row_data(ids[i]);
    if (from == nullptr) return i;
    std::memcpy(out + i * row_bytes, from, row_bytes);
  }
  return n;
}

#if defined(__x86_64__)
char* align_down(char* p) { return p - reinterpret_cast<uintptr_t>(p) % 64; }
char* align_up(char* p) { return align_down(p + 63); }

// Large gathers of rows of 64 bytes or more. The output is written in whole 64-byte
// cache lines with streaming stores, so no line is read before being overwritten (no
// read-for-ownership): that frees memory bandwidth and fill buffers for the random row
// reads. Measured on 512-byte rows (bench/gather_bench.h): 0.75-0.8 of memcpy's bandwidth
// against 0.55-0.6 for gather_wide; 32-byte AVX2 streams reached 0.7, and streaming only
// the lines inside each row while storing the partial ones plainly gained nothing (0.57
// into an unaligned buffer). So wherever a row ends inside a line, that line is assembled
// from the end of the row and the start of the next with masked loads, which makes any
// row size and any output alignment stream whole lines. Only the slice's first and last
// partial lines, which it may share with a neighbour, use plain stores.
__attribute__((target("avx512f,avx512bw"))) size_t gather_streaming(const RowSource& src,
                                                                    const int64_t* ids, size_t n,
                                                                    char* out) {
  if (n == 0) return 0;
  const size_t row_bytes = src.row_bytes;
  const char* from = src.row_data(ids[0]);
  if (from == nullptr) return 0;
  std::memcpy(out, from, static_cast<size_t>(align_up(out) - out));
  for (size_t i = 0;; ++i) {
    char* to = out + i * row_bytes;
    char* lines_end = align_down(to + row_bytes);
    for (char* line = align_up(to); line < lines_end; line += 64) {
      _mm512_stream_si512(reinterpret_cast<__m512i*>(line), _mm512_loadu_si512(from + (line - to)));
    }
    const size_t tail = static_cast<size_t>(to + row_bytes - lines_end);
    const char* next = i + 1 < n ? src.row_data(ids[i + 1]) : nullptr;
    if (next == nullptr) {  // the last row, or the next id is out of range
      std::memcpy(lines_end, from + row_bytes - tail, tail);
      // Streaming stores are weakly ordered; the fence makes them visible to whoever
      // synchronises with this thread next, as plain stores would be.
      _mm_sfence();
      return i + 1;
    }
    if (tail != 0) {
      // Bytes [0, tail) of the line from this row, the rest from the start of the next.
      // Masked-off bytes are not read, so addressing before `next` cannot fault.
      const __mmask64 mine = (uint64_t{1} << tail) - 1;
      const void* next_shifted =
          reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(next) - tail);
      __m512i line = _mm512_maskz_loadu_epi8(mine, from + row_bytes - tail);
      line = _mm512_mask_loadu_epi8(line, ~mine, next_shifted);
      _mm512_stream_si512(reinterpret_cast<__m512i*>(lines_end), line);
    }
    from = next;
  }
}

bool cpu_can_stream() {
  static const bool can = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  return can;
}
#endif

GatherKernel choose_kernel(size_t row_bytes, size_t out_bytes) {
  switch (row_bytes) {
    case 1:
      return gather_fixed<1>;
    case 4:
      return gather_fixed<4>;
    case 8:
      return gather_fixed<8>;
    default:
      break;
  }
#if defined(__x86_64__)
  // From 64 bytes on, a line holds parts of at most two rows.
  if (row_bytes >= 64 && out_bytes >= kStreamMinBytes && cpu_can_stream()) {
    return gather_streaming;
  }
#else
  (void)out_bytes;
#endif
  return gather_wide;
}

}  // namespace

FeatureStore::FeatureStore(int64_t node_begin, int64_t node_end, int64_t edge_begin,
                           int64_t edge_end)
    : node_begin_(node_begin), node_end_(node_end), edge_begin_(edge_begin), edge_end_(edge_end) {
  if (node_end < node_begin) {
    throw Error("feature store: node range " + range_text(node_begin, node_end) + " is reversed");
  }
  if (edge_end < edge_begin) {
    throw Error("feature store: edge range " + range_text(edge_begin, edge_end) + " is reversed");
  }
}

FeatureStore::Range FeatureStore::range(RowSpace space) const {
  return space == RowSpace::kNode ? Range{node_begin_, node_end_} : Range{edge_begin_, edge_end_};
}

void FeatureStore::put(const std::string& group, const std::string& name, RowSpace space,
                       ArrayRef array) {
  const std::string what = "feature store: put " + key_name(group, name) + ": ";
  if ((group == "node" && space != RowSpace::kNode) ||
      (group == "edge" && space != RowSpace::kEdge)) {
    throw Error(what + "group '" + group + "' must hold " + group + " rows, not " +
                space_name(space) + " rows");
  }
  // A group is one node or edge type: mixing spaces in it is a caller's mix-up of names.
  for (auto it = entries_.lower_bound({group, ""});
       it != entries_.end() && it->first.first == group; ++it) {
    if (it->second.space != space && it->first.second != name) {
      throw Error(what + "group '" + group + "' already holds " + space_name(it->second.space) +
                  " rows (" + it->first.second + "), not " + space_name(space) + " rows");
    }
  }
  if (array.empty()) throw Error(what + "the array is empty (no data)");
  const Range rows = range(space);
  if (array.shape().empty() || array.rows() != rows.size()) {
    throw Error(what + "the array has " + std::to_string(array.rows()) +
                " rows, but this partition's " + space_name(space) + " range " +
                range_text(rows.begin, rows.end) + " has " + std::to_string(rows.size()));
  }
  entries_[{group, name}] = Entry{space, std::move(array)};
}

const ArrayRef* FeatureStore::get(const std::string& group, const std::string& name) const {
  auto it = entries_.find({group, name});
  return it == entries_.end() ? nullptr : &it->second.array;
}

bool FeatureStore::contains(const std::string& group, const std::string& name) const {
  return entries_.count({group, name}) != 0;
}

bool FeatureStore::remove(const std::string& group, const std::string& name) {
  return entries_.erase({group, name}) != 0;
}

std::vector<std::pair<std::string, std::string>> FeatureStore::keys() const {
  std::vector<Key> keys;
  keys.reserve(entries_.size());
  for (const auto& entry : entries_) keys.push_back(entry.first);
  return keys;
}

const FeatureStore::Entry& FeatureStore::find(const std::string& group, const std::string& name,
                                              const char* op) const {
  auto it = entries_.find({group, name});
  if (it != entries_.end()) return it->second;
  std::string have;
  for (const auto& entry : entries_) {
    have += (have.empty() ? "" : ", ") + key_name(entry.first.first, entry.first.second);
  }
  throw Error(std::string("feature store: ") + op + ": no attribute " + key_name(group, name) +
              " (stored: " + (have.empty() ? "none" : have) + ")");
}

int64_t FeatureStore::row_width_checked(const std::string& group, const std::string& name,
                                        DType expected) const {
  const ArrayRef& array = find(group, name, "gather_as").array;
  if (array.dtype() != expected) {
    throw Error("feature store: gather_as " + key_name(group, name) + ": dtype is " +
                std::string(dtype_name(array.dtype())) + ", requested " +
                std::string(dtype_name(expected)));
  }
  return array.row_width();
}

void FeatureStore::gather(const std::string& group, const std::string& name,
                          Span<const int64_t> global_ids, void* out, size_t out_bytes,
                          int threads) const {
  const Entry& entry = find(group, name, "gather");
  const size_t row_bytes = entry.array.row_bytes();
  const size_t n = global_ids.size();
  if (out_bytes != n * row_bytes) {
    throw Error("feature store: gather " + key_name(group, name) + ": output buffer has " +
                std::to_string(out_bytes) + " bytes, expected " + std::to_string(n * row_bytes) +
                " (" + std::to_string(n) + " ids x " + std::to_string(row_bytes) +
                " bytes per row)");
  }
  const Range rows = range(entry.space);
  const RowSource src{static_cast<const char*>(entry.array.raw_data()), row_bytes,
                      static_cast<uint64_t>(rows.begin), static_cast<uint64_t>(rows.size())};
  const GatherKernel kernel = choose_kernel(row_bytes, out_bytes);
  char* const dst = static_cast<char*>(out);

  std::atomic<size_t> first_bad{n};
  int workers = out_bytes > kParallelMinBytes ? threads : 1;
  parallel_for(static_cast<int64_t>(n), workers, [&](int64_t lo, int64_t hi) {
    size_t count = static_cast<size_t>(hi - lo);
    size_t bad =
        static_cast<size_t>(lo) + kernel(src, global_ids.data() + lo, count, dst + lo * row_bytes);
    if (bad == static_cast<size_t>(hi)) return;
    // Slices finish in any order; keep the earliest bad position so the message names the
    // first bad id, as a single-threaded gather would.
    size_t seen = first_bad.load();
    while (bad < seen && !first_bad.compare_exchange_weak(seen, bad)) {
    }
  });
  if (first_bad < n) {
    size_t pos = first_bad;
    throw Error("feature store: gather " + key_name(group, name) + ": global id " +
                std::to_string(global_ids[pos]) + " (position " + std::to_string(pos) +
                ") is outside this partition's " + space_name(entry.space) + " range " +
                range_text(rows.begin, rows.end));
  }
}

}  // namespace partita
