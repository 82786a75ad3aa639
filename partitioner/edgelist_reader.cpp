// Text edge lists (SNAP style): "src dst" per line, '#' comments.
#include <algorithm>
#include <string_view>

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

}  // namespace

// Edges keep the file's order (edge id = position among the data lines) and are taken as
// directed, exactly as written: self-loops and repeated pairs are kept, since a user who
// wants them gone can say so when building the file, and we cannot undo a silent removal.
Dataset read_edgelist(const std::string& path) {
  std::string text = detail::read_file(path);
  Dataset d;
  d.name = detail::file_stem(path);
  d.edges.reserve(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  detail::ParseProgress progress("read " + path, text.size());
  detail::LineReader lines(text);
  std::vector<std::string_view> fields;
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
    int64_t src = parse_node_id(fields[0], path, lines.line_number());
    int64_t dst = parse_node_id(fields[1], path, lines.line_number());
    d.edges.push_back(src, dst);
    if (std::max(src, dst) > max_id) {
      max_id = std::max(src, dst);
      max_id_line = lines.line_number();
    }
    progress.update(lines.position());
  }
  progress.done(text.size());
  if (d.edges.size() == 0) throw file_error(path, "no edges (only blank or comment lines)");
  const std::string sparse = detail::sparse_ids_problem(max_id, d.edges.size());
  if (!sparse.empty()) throw file_error(path, max_id_line, sparse);
  d.num_nodes = max_id + 1;
  d.validate();
  return d;
}

}  // namespace partita
