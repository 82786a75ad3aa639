// Text edge lists (SNAP style): "src dst" per line, '#' comments.
#include <algorithm>
#include <numeric>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/error.h"
#include "partitioner/reader_util.h"
#include "partitioner/readers.h"

namespace partita {

namespace {

std::string_view strip_comment(std::string_view line) {
  size_t hash = line.find('#');
  return hash == std::string_view::npos ? line : line.substr(0, hash);
}

int64_t parse_node_id(std::string_view token, const std::string& path, long line) {
  int64_t id = 0;
  if (!detail::parse_number(token, &id)) {
    throw file_error(path, line, "'" + std::string(token) + "' is not a node id (expected a non-negative integer)");
  }
  if (id < 0) throw file_error(path, line, "negative node id " + std::string(token));
  return id;
}

// Numbers tokens 0..N-1 in order of first appearance (ReadOptions::remap_ids).
class IdRemap {
 public:
  explicit IdRemap(size_t expected_edges) { ids_.reserve(expected_edges); }

  int64_t id_of(std::string_view token) {
    auto [it, fresh] = ids_.try_emplace(token, static_cast<int64_t>(names_.size()));
    if (fresh) names_.emplace_back(token);
    return it->second;
  }
  int64_t size() const { return static_cast<int64_t>(names_.size()); }
  std::vector<std::string> take_names() { return std::move(names_); }

 private:
  std::unordered_map<std::string_view, int64_t> ids_;  // views into the file's text
  std::vector<std::string> names_;
};

// The symmetric closure of `edges` (ReadOptions::undirected), sorted by (dst, src), each
// pair once. Edge types are not kept: edge lists carry none.
EdgeList symmetric_closure(const EdgeList& edges) {
  std::vector<std::pair<int64_t, int64_t>> both;  // (dst, src)
  both.reserve(2 * static_cast<size_t>(edges.size()));
  for (int64_t e = 0; e < edges.size(); ++e) {
    both.emplace_back(edges.dst[e], edges.src[e]);
    if (edges.src[e] != edges.dst[e]) both.emplace_back(edges.src[e], edges.dst[e]);
  }
  return detail::unique_edges_by_dst(std::move(both));
}

}  // namespace

// Edges keep the file's order (edge id = position among the data lines) and are taken as
// directed, exactly as written: self-loops and repeated pairs are kept, since a user who
// wants them gone can say so when building the file, and we cannot undo a silent removal.
// Only options.undirected, asked for, merges repeated pairs.
Dataset read_edgelist(const std::string& path, const ReadOptions& options) {
  const std::string text = detail::read_file(path);
  Dataset d;
  d.name = detail::file_stem(path);
  d.edges.reserve(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  detail::ParseProgress progress("read " + path, text.size());
  detail::LineReader lines(text);
  std::vector<std::string_view> fields;
  IdRemap remap(options.remap_ids ? d.edges.src.capacity() : 0);
  int64_t max_id = -1;
  long max_id_line = 0;
  std::string_view line;
  while (lines.next(&line)) {
    detail::split_whitespace(strip_comment(line), &fields);
    if (fields.empty()) continue;
    if (fields.size() != 2) {
      throw file_error(path, lines.line_number(),
                       "expected 2 columns (src dst), found " + std::to_string(fields.size()));
    }
    const int64_t src = options.remap_ids ? remap.id_of(fields[0]) : parse_node_id(fields[0], path, lines.line_number());
    const int64_t dst = options.remap_ids ? remap.id_of(fields[1]) : parse_node_id(fields[1], path, lines.line_number());
    d.edges.push_back(src, dst);
    if (std::max(src, dst) > max_id) {
      max_id = std::max(src, dst);
      max_id_line = lines.line_number();
    }
    progress.update(lines.position());
  }
  progress.done(text.size());
  if (d.edges.size() == 0) throw file_error(path, "no edges (only blank or comment lines)");
  if (options.remap_ids) {
    d.num_nodes = remap.size();
    d.node_names = remap.take_names();
  } else {
    const std::string sparse = detail::sparse_ids_problem(max_id, d.edges.size());
    if (!sparse.empty()) throw file_error(path, max_id_line, sparse + " (--remap-ids, or data.remap_ids in a job)");
    d.num_nodes = max_id + 1;
  }
  if (options.undirected) d.edges = symmetric_closure(d.edges);
  d.validate();
  return d;
}

}  // namespace partita
