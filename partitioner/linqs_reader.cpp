// LINQS citation datasets (Cora, CiteSeer): X.content lists the papers, X.cites the
// citations.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "base/error.h"
#include "base/random.h"
#include "partitioner/reader_util.h"
#include "partitioner/readers.h"

namespace partita {

namespace {

namespace fs = std::filesystem;

// The split of the Planetoid papers (Yang et al. 2016), which GCN accuracies are quoted on.
constexpr size_t kTrainPerClass = 20;
constexpr size_t kNumVal = 500;
constexpr size_t kNumTest = 1000;

struct LinqsFiles {
  std::string content;
  std::string cites;
};

// `path` is a folder with one X.content (and its X.cites), the prefix "dir/X", or either
// file's own path.
LinqsFiles locate_files(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      if (entry.path().extension() == ".content") found.push_back(entry.path().string());
    }
    if (ec) throw file_error(path, "cannot list the folder: " + ec.message());
    if (found.empty()) throw file_error(path, "no .content file in this folder (LINQS format)");
    if (found.size() > 1) {
      std::sort(found.begin(), found.end());
      throw file_error(path, "several .content files (" + found[0] + ", " + found[1] +
                                 ", ...); pass the prefix dir/X of the one to read");
    }
    fs::path prefix = fs::path(found[0]).replace_extension();
    return {found[0], prefix.string() + ".cites"};
  }
  fs::path prefix(path);
  if (prefix.extension() == ".content" || prefix.extension() == ".cites") prefix.replace_extension();
  return {prefix.string() + ".content", prefix.string() + ".cites"};
}

struct Papers {
  std::vector<std::string> ids;
  std::vector<std::string> labels;
  int64_t feature_dim = -1;
  std::vector<float> x;
};

// One paper per line: id, features, label; whitespace-separated.
Papers read_content(const std::string& path) {
  std::string text = detail::read_file(path);
  Papers papers;
  std::unordered_map<std::string, long> first_line;
  detail::ParseProgress progress("read " + path, text.size());
  detail::LineReader lines(text);
  std::vector<std::string_view> fields;
  std::string_view line;
  while (lines.next(&line)) {
    detail::split_whitespace(line, &fields);
    if (fields.empty()) continue;
    long n = lines.line_number();
    if (fields.size() < 2) throw file_error(path, n, "expected: paper_id features... label");
    int64_t dim = static_cast<int64_t>(fields.size()) - 2;
    if (papers.feature_dim < 0) papers.feature_dim = dim;
    if (dim != papers.feature_dim) {
      throw file_error(path, n, "has " + std::to_string(dim) + " features, the first paper has " +
                                    std::to_string(papers.feature_dim));
    }
    std::string id(fields.front());
    auto [it, inserted] = first_line.emplace(id, n);
    if (!inserted) {
      throw file_error(path, n, "paper '" + id + "' already appears on line " + std::to_string(it->second));
    }
    for (size_t i = 1; i + 1 < fields.size(); ++i) {
      float value = 0;
      if (!detail::parse_number(fields[i], &value)) {
        throw file_error(path, n, "feature " + std::to_string(i) + " ('" + std::string(fields[i]) +
                                      "') is not a number");
      }
      if (!std::isfinite(value)) {
        throw file_error(path, n, "feature " + std::to_string(i) + " is '" + std::string(fields[i]) +
                                      "': features must be finite");
      }
      papers.x.push_back(value);
    }
    papers.ids.push_back(std::move(id));
    papers.labels.emplace_back(fields.back());
    progress.update(lines.position());
  }
  progress.done(text.size());
  if (papers.ids.empty()) throw file_error(path, "no papers");
  return papers;
}

// Classes numbered in sorted order of their names, so the numbering does not depend on
// which paper comes first in the file.
int64_t number_classes(const std::vector<std::string>& labels, std::vector<int64_t>* y) {
  std::vector<std::string> names(labels);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  y->clear();
  y->reserve(labels.size());
  for (const std::string& label : labels) {
    y->push_back(std::lower_bound(names.begin(), names.end(), label) - names.begin());
  }
  return static_cast<int64_t>(names.size());
}

// One citation per line, "cited citing". Each citation becomes edges in both directions;
// self-loops are dropped, repeats (also a pair cited both ways) merged, citations of papers
// missing from the .content file counted and skipped. Edges are sorted by (dst, src), the
// order a CSC (in-neighbour) view takes them in.
EdgeList read_cites(const std::string& path, const std::vector<std::string>& ids) {
  std::unordered_map<std::string_view, int64_t> node_of;
  node_of.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) node_of.emplace(ids[i], static_cast<int64_t>(i));

  std::string text = detail::read_file(path);
  std::vector<std::pair<int64_t, int64_t>> dst_src;
  int64_t dangling = 0, self_loops = 0;
  std::string first_dangling;
  detail::LineReader lines(text);
  std::vector<std::string_view> fields;
  std::string_view line;
  while (lines.next(&line)) {
    detail::split_whitespace(line, &fields);
    if (fields.empty()) continue;
    if (fields.size() != 2) {
      throw file_error(path, lines.line_number(),
                       "expected 2 paper ids (cited citing), found " + std::to_string(fields.size()) + " fields");
    }
    auto cited = node_of.find(fields[0]);
    auto citing = node_of.find(fields[1]);
    if (cited == node_of.end() || citing == node_of.end()) {
      if (dangling++ == 0) first_dangling = std::string(cited == node_of.end() ? fields[0] : fields[1]);
      continue;
    }
    if (cited->second == citing->second) {
      ++self_loops;
      continue;
    }
    dst_src.emplace_back(cited->second, citing->second);
    dst_src.emplace_back(citing->second, cited->second);
  }
  if (dangling > 0) {
    spdlog::warn("{}: skipped {} citations of papers missing from the .content file (first: '{}')",
                 path, dangling, first_dangling);
  }
  if (self_loops > 0) spdlog::debug("{}: dropped {} self-citations", path, self_loops);

  return detail::unique_edges_by_dst(std::move(dst_src));
}

std::vector<int64_t> sorted(std::vector<int64_t> ids) {
  std::sort(ids.begin(), ids.end());
  return ids;
}

// Planetoid-style split: the first kTrainPerClass nodes of each class after a seeded
// shuffle (all of a class if it is smaller), then kNumVal validation and kNumTest test
// nodes from a seeded shuffle of the remaining nodes. A graph too small for that gets what
// remains: validation first, then test, possibly empty.
void split_nodes(Dataset* d, uint64_t seed) {
  Rng rng(seed);
  std::vector<std::vector<int64_t>> by_class(static_cast<size_t>(d->num_classes));
  for (int64_t node = 0; node < d->num_nodes; ++node) by_class[d->y[node]].push_back(node);

  std::vector<bool> in_train(static_cast<size_t>(d->num_nodes), false);
  std::vector<int64_t> train;
  for (std::vector<int64_t>& members : by_class) {
    shuffle(members, rng);
    members.resize(std::min(members.size(), kTrainPerClass));
    for (int64_t node : members) in_train[node] = true;
    train.insert(train.end(), members.begin(), members.end());
  }
  std::vector<int64_t> rest;
  for (int64_t node = 0; node < d->num_nodes; ++node) {
    if (!in_train[node]) rest.push_back(node);
  }
  shuffle(rest, rng);
  size_t num_val = std::min(kNumVal, rest.size());
  size_t num_test = std::min(kNumTest, rest.size() - num_val);
  d->train_idx = sorted(std::move(train));
  d->val_idx = sorted({rest.begin(), rest.begin() + num_val});
  d->test_idx = sorted({rest.begin() + num_val, rest.begin() + num_val + num_test});
}

}  // namespace

Dataset read_linqs(const std::string& path, const ReadOptions& options) {
  LinqsFiles files = locate_files(path);
  Papers papers = read_content(files.content);
  Dataset d;
  d.name = detail::file_stem(files.content);
  d.num_nodes = static_cast<int64_t>(papers.ids.size());
  d.feature_dim = papers.feature_dim;
  d.x = std::move(papers.x);
  d.num_classes = number_classes(papers.labels, &d.y);
  d.edges = read_cites(files.cites, papers.ids);
  d.node_names = std::move(papers.ids);
  split_nodes(&d, options.split_seed);
  d.validate();
  return d;
}

}  // namespace partita
