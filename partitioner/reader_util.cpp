#include "partitioner/reader_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/error.h"

namespace partita::detail {

std::string folder_name(const std::string& path) {
  std::filesystem::path p(path);
  if (!p.has_filename()) p = p.parent_path();
  return p.filename().string();
}

std::string file_stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

std::string sparse_ids_problem(int64_t max_id, int64_t num_edges) {
  // max_id >= limit is max_id + 1 > limit without overflowing at INT64_MAX; the edges are
  // held in memory, so 16 * edges cannot overflow.
  const int64_t limit = kMaxIdsPerEdge * num_edges + kIdSlack;
  if (max_id < limit) return "";
  return "node id " + std::to_string(max_id) + " is far beyond the number of edges (" + std::to_string(num_edges) +
         "): edge lists must use ids 0..N-1 with N at most " + std::to_string(kMaxIdsPerEdge) + " * edges + " +
         std::to_string(kIdSlack) + "; remap sparse ids to consecutive ones first";
}

EdgeList unique_edges_by_dst(std::vector<std::pair<int64_t, int64_t>> dst_src) {
  std::sort(dst_src.begin(), dst_src.end());
  dst_src.erase(std::unique(dst_src.begin(), dst_src.end()), dst_src.end());
  EdgeList edges;
  edges.reserve(dst_src.size());
  for (const auto& [dst, src] : dst_src) edges.push_back(src, dst);
  return edges;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  if (shape.size() == 1) text += ",";
  return text + ")";
}

void split_whitespace(std::string_view line, std::vector<std::string_view>* fields) {
  fields->clear();
  size_t i = 0;
  while (true) {
    while (i < line.size() && is_blank(line[i])) ++i;
    if (i == line.size()) return;
    size_t start = i;
    while (i < line.size() && !is_blank(line[i])) ++i;
    fields->push_back(line.substr(start, i - start));
  }
}

ParseProgress::ParseProgress(const std::string& task, size_t total_bytes) {
  if (total_bytes >= kProgressThresholdBytes) {
    progress_ = std::make_unique<Progress>(task, static_cast<int64_t>(total_bytes), "bytes");
  }
}

void ParseProgress::done(size_t total_bytes) {
  if (progress_ == nullptr) return;
  progress_->advance(static_cast<int64_t>(total_bytes - reported_));
  reported_ = total_bytes;
  progress_->done();
}

}  // namespace partita::detail
