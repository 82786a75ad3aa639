// Helpers shared by the dataset readers (not part of the public API): whole-file input,
// line splitting with line numbers, progress for large inputs, and chunked .npy output.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "base/dtype.h"
#include "base/file_util.h"
#include "base/progress.h"
#include "partitioner/dataset.h"

namespace partita::detail {

// File primitives shared with the rest of the project.
using partita::open_for_reading;
using partita::open_for_writing;
using partita::read_exactly;
using partita::read_file;  // text readers parse with from_chars and string_views into it
using partita::regular_file_size;
using partita::ScopedFd;
using partita::seek_to;
using partita::write_all;

// "fb15k-237" for "data/fb15k-237/": a dataset folder's name (the trailing slash that shell
// completion leaves is ignored).
std::string folder_name(const std::string& path);
// "cora" for "data/cora.content".
std::string file_stem(const std::string& path);

// Readers that take the node count as the largest edge id + 1 size every per-node array
// downstream by that id, so a sparse id space (say, 64-bit hashes) would allocate memory for
// nodes that do not exist, or overflow. Beyond kMaxIdsPerEdge ids per edge (plus
// kIdSlack) the ids are taken to be sparse rather than a graph with that many isolated
// nodes. Returns what is wrong with ids up to `max_id` over `num_edges` edges (the text of
// the reader's error), or "" when they are in range. Safe at max_id = INT64_MAX.
inline constexpr int64_t kMaxIdsPerEdge = 16;
inline constexpr int64_t kIdSlack = 1'000'000;
std::string sparse_ids_problem(int64_t max_id, int64_t num_edges);

// "(2, 3)", "(5,)", "()": a shape as Python (and so numpy's header) writes it.
std::string shape_text(const std::vector<int64_t>& shape);

// The edges of `dst_src` pairs, each pair once, sorted by (dst, src): the order of a CSC
// (in-neighbour) view. What the readers that merge repeated edges yield.
EdgeList unique_edges_by_dst(std::vector<std::pair<int64_t, int64_t>> dst_src);

// Iterates the lines of a buffer, numbering them from 1 and removing the '\r' of CRLF
// endings, so every reader accepts files written on Windows.
class LineReader {
 public:
  explicit LineReader(std::string_view text) : text_(text) {}

  // Sets `line` to the next line (without its ending); false at the end of the buffer.
  bool next(std::string_view* line) {
    if (pos_ >= text_.size()) return false;
    size_t end = text_.find('\n', pos_);
    if (end == std::string_view::npos) end = text_.size();
    *line = text_.substr(pos_, end - pos_);
    if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
    pos_ = end + 1;
    ++line_number_;
    return true;
  }
  long line_number() const { return line_number_; }
  size_t position() const { return pos_ < text_.size() ? pos_ : text_.size(); }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  long line_number_ = 0;
};

inline bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// Splits on runs of spaces and tabs, appending to `fields` (cleared first).
void split_whitespace(std::string_view line, std::vector<std::string_view>* fields);

// Parses the whole of `token` as T (integers or floats); false if anything is left over,
// it is empty, or out of T's range.
template <typename T>
bool parse_number(std::string_view token, T* value) {
  if (token.empty()) return false;
  const char* end = token.data() + token.size();
  auto [ptr, ec] = std::from_chars(token.data(), end, *value);
  return ec == std::errc() && ptr == end;
}

// Progress lines while parsing a buffer; silent for inputs that take well under a second,
// where a log line per file would only be noise.
class ParseProgress {
 public:
  ParseProgress(const std::string& task, size_t total_bytes);
  // `position` is the number of bytes parsed so far. Cheap enough to call per line.
  void update(size_t position) {
    if (progress_ == nullptr || position - reported_ < kStride) return;
    progress_->advance(static_cast<int64_t>(position - reported_));
    reported_ = position;
  }
  void done(size_t total_bytes);

 private:
  static constexpr size_t kStride = size_t{1} << 20;
  std::unique_ptr<Progress> progress_;
  size_t reported_ = 0;
};

// Inputs at least this large log progress (about a second of parsing or reading).
constexpr size_t kProgressThresholdBytes = size_t{64} << 20;

// A piece of an array's data, in order.
struct ByteRange {
  const void* data;
  size_t bytes;
};

// Writes a .npy file whose data is the concatenation of `chunks`, so arrays kept as
// separate buffers (edge_index's src and dst rows) are written without an interleaved copy.
// The chunks must add up to exactly the bytes `shape` needs.
void write_npy_chunks(const std::string& path, DType dtype, const std::vector<int64_t>& shape,
                      const std::vector<ByteRange>& chunks);

}  // namespace partita::detail
