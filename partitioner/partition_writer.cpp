// Writing a partitioned dataset: relabel, build each part's CSC, write the folder atomically.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "base/error.h"
#include "base/file_util.h"
#include "base/parallel.h"
#include "base/progress.h"
#include "base/staging_dir.h"
#include "base/stopwatch.h"
#include "partitioner/meta_json.h"
#include "partitioner/partition_format.h"

namespace partita {

namespace fs = std::filesystem;

namespace {

// Rows gathered per write call: big enough for sequential writes, small enough that the
// buffer stays in cache-friendly territory and memory does not grow with the dataset.
constexpr int64_t kGatherRows = 1 << 16;

// Writes rows source[ids[i]] (each `width` elements wide) to an array file of shape
// [ids.size(), width] (or [ids.size()] when width is 0, for per-node scalars).
template <typename T>
void write_gathered(const std::string& path, const std::vector<T>& source, int64_t width,
                    Span<const int64_t> ids) {
  int64_t row = std::max<int64_t>(width, 1);
  std::vector<int64_t> shape{static_cast<int64_t>(ids.size())};
  if (width > 0) shape.push_back(width);
  ArrayWriter writer(path, dtype_of<T>(), shape);
  std::vector<T> buffer;
  for (size_t begin = 0; begin < ids.size(); begin += kGatherRows) {
    size_t end = std::min(ids.size(), begin + static_cast<size_t>(kGatherRows));
    buffer.resize((end - begin) * row);
    for (size_t i = begin; i < end; ++i) {
      std::copy_n(source.data() + ids[i] * row, row, buffer.data() + (i - begin) * row);
    }
    writer.append(buffer.data(), buffer.size() * sizeof(T));
  }
  writer.finish();
}

}  // namespace

InEdges build_in_edges(const Dataset& d, int threads) {
  // A stable parallel counting sort by destination: thread t counts and then places the
  // edges of its contiguous slice of the edge list, after the slots of threads before it in
  // every column. Each column therefore lists its edges in original order, the canonical
  // neighbour order partition-invariant sampling relies on, whatever the thread count.
  const int64_t n = d.num_nodes, m = d.num_edges();
  const int slices = static_cast<int>(std::min<int64_t>(std::min(resolve_threads(threads), 8), std::max<int64_t>(m, 1)));
  const auto& src = d.edges.src;
  const auto& dst = d.edges.dst;
  std::vector<std::vector<int64_t>> cursor(slices);
  parallel_for(slices, slices, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      cursor[t].assign(n, 0);
      for (int64_t e = m * t / slices; e < m * (t + 1) / slices; ++e) ++cursor[t][dst[e]];
    }
  });
  InEdges in;
  in.indptr.assign(n + 1, 0);
  for (int64_t v = 0; v < n; ++v) {
    int64_t at = in.indptr[v];
    for (int t = 0; t < slices; ++t) {
      int64_t count = cursor[t][v];
      cursor[t][v] = at;  // from a count to the slice's first slot in column v
      at += count;
    }
    in.indptr[v + 1] = at;
  }
  in.src.resize(m);
  in.edge_ids.resize(m);
  parallel_for(slices, slices, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      for (int64_t e = m * t / slices; e < m * (t + 1) / slices; ++e) {
        int64_t pos = cursor[t][dst[e]]++;
        in.src[pos] = src[e];
        in.edge_ids[pos] = e;
      }
    }
  });
  return in;
}

namespace {

// Global ids of a node split that part p owns, sorted.
std::vector<int64_t> split_of_part(const std::vector<int64_t>& split,
                                   const std::vector<int64_t>& new_id, int64_t begin,
                                   int64_t end) {
  std::vector<int64_t> ids;
  for (int64_t v : split) {
    int64_t g = new_id[v];
    if (g >= begin && g < end) ids.push_back(g);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

// Held-out edges go to the part that owns their destination, like message-passing edges.
// `attr`: the held-out edges' features [edges, width], null when the held-out edges have
// none; `time`: their times, null when they have none. `typed`: the graph has edge types.
// Each file is written even for an empty split: the reader expects them beside every split
// of such a graph.
int64_t write_edge_split(const std::string& part_dir, const std::string& name, const EdgeList& edges, bool typed,
                         const std::vector<float>* attr, int64_t width, const std::vector<int64_t>* time,
                         const std::vector<int64_t>& new_id, int64_t begin, int64_t end) {
  std::vector<int64_t> src, dst, kept;
  std::vector<int32_t> type;
  for (int64_t i = 0; i < edges.size(); ++i) {
    int64_t d = new_id[edges.dst[i]];
    if (d < begin || d >= end) continue;
    src.push_back(new_id[edges.src[i]]);
    dst.push_back(d);
    kept.push_back(i);
    if (!edges.type.empty()) type.push_back(edges.type[i]);
  }
  if (attr != nullptr) write_gathered(part_dir + "/" + name + "_edge_attr.bin", *attr, width, Span<const int64_t>(kept));
  if (time != nullptr) write_gathered(part_dir + "/" + name + "_edge_time.bin", *time, 0, Span<const int64_t>(kept));
  ArrayWriter writer(part_dir + "/" + name + "_edge_index.bin", DType::kInt64,
                     {2, static_cast<int64_t>(src.size())});
  writer.append(Span<const int64_t>(src));
  writer.append(Span<const int64_t>(dst));
  writer.finish();
  if (typed) write_array(part_dir + "/" + name + "_edge_type.bin", type);
  return static_cast<int64_t>(src.size());
}

struct WriteContext {
  const Dataset& d;
  const std::vector<int64_t>& new_id;
  const std::vector<int64_t>& orig_id;  // inverse of new_id
  const InEdges& in;
  const std::vector<int64_t>& book;
};

PartStats write_part(const WriteContext& c, int p, const std::string& part_dir) {
  const Dataset& d = c.d;
  const int64_t begin = c.book[p], end = c.book[p + 1];
  PartStats stats;
  stats.num_nodes = end - begin;
  std::error_code ec;
  if (!fs::create_directory(part_dir, ec)) throw file_error(part_dir, "cannot create: " + ec.message());

  // The part's CSC: its nodes' columns in global-id order, sources relabelled. Columns are
  // read in original-id order within the part, so the reads stream through `in`.
  Span<const int64_t> orig(c.orig_id.data() + begin, stats.num_nodes);
  std::vector<int64_t> indptr(stats.num_nodes + 1, 0);
  for (int64_t i = 0; i < stats.num_nodes; ++i) {
    indptr[i + 1] = indptr[i] + c.in.indptr[orig[i] + 1] - c.in.indptr[orig[i]];
  }
  stats.num_edges = indptr.back();
  std::vector<int64_t> indices(stats.num_edges), edge_ids(stats.num_edges);
  // Remote sources are marked in a bitmap over all nodes rather than collected and sorted:
  // O(E + N) instead of O(E log E) on cut-heavy parts.
  std::vector<bool> is_halo(d.num_nodes, false);
  for (int64_t i = 0; i < stats.num_nodes; ++i) {
    int64_t from = c.in.indptr[orig[i]], to = c.in.indptr[orig[i] + 1];
    int64_t out = indptr[i];
    for (int64_t k = from; k < to; ++k, ++out) {
      int64_t source = c.new_id[c.in.src[k]];
      indices[out] = source;
      edge_ids[out] = c.in.edge_ids[k];
      if (source < begin || source >= end) {
        ++stats.num_cut_edges;
        is_halo[source] = true;
      }
    }
  }
  write_array(part_dir + "/indptr.bin", indptr);
  write_array(part_dir + "/indices.bin", indices);
  write_array(part_dir + "/edge_ids.bin", edge_ids);
  write_array(part_dir + "/orig_ids.bin", {stats.num_nodes}, orig.data());
  std::vector<int64_t> halo;
  for (int64_t g = 0; g < d.num_nodes; ++g) {
    if (is_halo[g]) halo.push_back(g);
  }
  stats.num_halo = static_cast<int64_t>(halo.size());
  write_array(part_dir + "/halo.bin", halo);
  auto train = split_of_part(d.train_idx, c.new_id, begin, end);
  auto val = split_of_part(d.val_idx, c.new_id, begin, end);
  auto test = split_of_part(d.test_idx, c.new_id, begin, end);
  stats.num_train = static_cast<int64_t>(train.size());
  stats.num_val = static_cast<int64_t>(val.size());
  stats.num_test = static_cast<int64_t>(test.size());
  write_array(part_dir + "/train_idx.bin", train);
  write_array(part_dir + "/val_idx.bin", val);
  write_array(part_dir + "/test_idx.bin", test);

  if (d.feature_dim > 0) write_gathered(part_dir + "/x.bin", d.x, d.feature_dim, orig);
  if (!d.y.empty()) write_gathered(part_dir + "/y.bin", d.y, 0, orig);
  if (!d.node_time.empty()) write_gathered(part_dir + "/node_time.bin", d.node_time, 0, orig);
  if (!d.node_type.empty()) write_gathered(part_dir + "/node_type.bin", d.node_type, 0, orig);
  if (d.edge_feature_dim > 0) {
    write_gathered(part_dir + "/edge_attr.bin", d.edge_attr, d.edge_feature_dim, Span<const int64_t>(edge_ids));
  }
  if (!d.edge_time.empty()) write_gathered(part_dir + "/edge_time.bin", d.edge_time, 0, edge_ids);
  if (!d.edges.type.empty()) write_gathered(part_dir + "/edge_type.bin", d.edges.type, 0, edge_ids);
  if (d.val_edges.size() > 0 || d.test_edges.size() > 0) {
    const bool typed = !d.edge_types.empty();
    const bool attr = d.edge_feature_dim > 0 && (!d.val_edge_attr.empty() || !d.test_edge_attr.empty());
    const bool time = !d.val_edge_time.empty() || !d.test_edge_time.empty();
    stats.num_val_edges = write_edge_split(part_dir, "val", d.val_edges, typed, attr ? &d.val_edge_attr : nullptr,
                                           d.edge_feature_dim, time ? &d.val_edge_time : nullptr, c.new_id, begin, end);
    stats.num_test_edges = write_edge_split(part_dir, "test", d.test_edges, typed, attr ? &d.test_edge_attr : nullptr,
                                            d.edge_feature_dim, time ? &d.test_edge_time : nullptr, c.new_id, begin,
                                            end);
  }
  return stats;
}

}  // namespace

PartitionMeta write_partitions(const Dataset& d, const std::vector<int32_t>& part_of_node,
                               const PartitionOptions& partition_options, const std::string& dir,
                               const WriteOptions& options, const InEdges* in_edges) {
  const int k = partition_options.num_parts;
  if (static_cast<int64_t>(part_of_node.size()) != d.num_nodes) {
    throw Error("partition assignment covers " + std::to_string(part_of_node.size()) +
                " nodes, the graph has " + std::to_string(d.num_nodes));
  }
  std::vector<int64_t> book(k + 1, 0);
  for (int32_t p : part_of_node) {
    if (p < 0 || p >= k) throw Error("partition assignment names part " + std::to_string(p));
    ++book[p + 1];
  }
  for (int p = 0; p < k; ++p) book[p + 1] += book[p];

  // Relabel: part p's nodes get [book[p], book[p+1]) in original order.
  std::vector<int64_t> new_id(d.num_nodes), orig_id(d.num_nodes);
  {
    std::vector<int64_t> next(book.begin(), book.end() - 1);
    for (int64_t v = 0; v < d.num_nodes; ++v) {
      new_id[v] = next[part_of_node[v]]++;
      orig_id[new_id[v]] = v;
    }
  }
  StagingDir staging(dir, options.overwrite, kMetaFile);
  InEdges own_in_edges;
  if (in_edges == nullptr) {
    own_in_edges = build_in_edges(d, options.threads);
    in_edges = &own_in_edges;
  }

  PartitionMeta meta = describe_dataset(d);
  meta.num_parts = k;
  meta.method = partition_method_name(partition_options.method);
  meta.seed = partition_options.seed;
  meta.partition_book = book;
  meta.parts.resize(k);

  Progress progress("write partitions", k, "parts");
  WriteContext context{d, new_id, orig_id, *in_edges, book};
  parallel_for(k, std::min(resolve_threads(options.threads), k), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      meta.parts[p] = write_part(context, static_cast<int>(p),
                                 staging.path() + "/part" + std::to_string(p));
      progress.advance();
    }
  });
  write_array(staging.path() + "/partition_book.bin", book);
  write_array(staging.path() + "/node_map.bin", new_id);
  if (options.keep_node_names && !d.node_names.empty()) {
    std::string names = "# id\tname: the original node id and the token the input had for it\n";
    for (size_t v = 0; v < d.node_names.size(); ++v) names += std::to_string(v) + "\t" + d.node_names[v] + "\n";
    write_file_atomically(staging.path() + "/" + kNodeNamesFile, names);
  }
  write_meta_json(meta, staging.path() + "/" + kMetaFile);
  staging.commit();
  progress.done();
  return meta;
}

PartitionMeta partition_dataset(const Dataset& d, const PartitionOptions& partition_options,
                                const std::string& dir, const WriteOptions& options) {
  StagingDir::check_target(dir, options.overwrite, kMetaFile);
  Stopwatch watch;
  std::vector<int32_t> parts = assign_partitions(d, partition_options);
  spdlog::info("{} assignment into {} parts took {:.2f}s", partition_method_name(partition_options.method),
               partition_options.num_parts, watch.seconds());
  // Built after METIS, not beside it: METIS is memory-bound, and this counting sort on the
  // other core slowed it by more (2-3 s on RMAT 1M/21M) than the sort costs alone.
  InEdges index = build_in_edges(d, options.threads);
  return write_partitions(d, parts, partition_options, dir, options, &index);
}

}  // namespace partita
