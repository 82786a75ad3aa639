// Writing a partitioned dataset: relabel, build each part's CSC, write the folder atomically.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "base/error.h"
#include "base/parallel.h"
#include "base/progress.h"
#include "base/staging_dir.h"
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

// The whole graph's CSC over relabelled ids. Columns of part p are the contiguous slice
// [book[p], book[p+1]), so each part's CSC is a slice with a rebased indptr.
struct GlobalCsc {
  std::vector<int64_t> indptr;    // [N+1]
  std::vector<int64_t> indices;   // [E] new source ids
  std::vector<int64_t> edge_ids;  // [E] original edge ids
};

GlobalCsc build_global_csc(const Dataset& d, const std::vector<int64_t>& new_id) {
  GlobalCsc csc;
  const int64_t n = d.num_nodes, m = d.num_edges();
  csc.indptr.assign(n + 1, 0);
  for (int64_t e = 0; e < m; ++e) ++csc.indptr[new_id[d.edges.dst[e]] + 1];
  for (int64_t v = 0; v < n; ++v) csc.indptr[v + 1] += csc.indptr[v];
  csc.indices.resize(m);
  csc.edge_ids.resize(m);
  std::vector<int64_t> cursor(csc.indptr.begin(), csc.indptr.end() - 1);
  // Edges are visited in original order, so every column comes out sorted by original
  // edge id: the canonical neighbour order partition-invariant sampling relies on.
  for (int64_t e = 0; e < m; ++e) {
    int64_t pos = cursor[new_id[d.edges.dst[e]]]++;
    csc.indices[pos] = new_id[d.edges.src[e]];
    csc.edge_ids[pos] = e;
  }
  return csc;
}

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
int64_t write_edge_split(const std::string& part_dir, const std::string& name,
                         const EdgeList& edges, const std::vector<int64_t>& new_id,
                         int64_t begin, int64_t end) {
  std::vector<int64_t> src, dst;
  std::vector<int32_t> type;
  for (int64_t i = 0; i < edges.size(); ++i) {
    int64_t d = new_id[edges.dst[i]];
    if (d < begin || d >= end) continue;
    src.push_back(new_id[edges.src[i]]);
    dst.push_back(d);
    if (!edges.type.empty()) type.push_back(edges.type[i]);
  }
  ArrayWriter writer(part_dir + "/" + name + "_edge_index.bin", DType::kInt64,
                     {2, static_cast<int64_t>(src.size())});
  writer.append(Span<const int64_t>(src));
  writer.append(Span<const int64_t>(dst));
  writer.finish();
  if (!edges.type.empty()) write_array(part_dir + "/" + name + "_edge_type.bin", type);
  return static_cast<int64_t>(src.size());
}

struct WriteContext {
  const Dataset& d;
  const std::vector<int64_t>& new_id;
  const std::vector<int64_t>& orig_id;  // inverse of new_id
  const GlobalCsc& csc;
  const std::vector<int64_t>& book;
};

PartStats write_part(const WriteContext& c, int p, const std::string& part_dir) {
  const Dataset& d = c.d;
  const int64_t begin = c.book[p], end = c.book[p + 1];
  const int64_t e_begin = c.csc.indptr[begin], e_end = c.csc.indptr[end];
  PartStats stats;
  stats.num_nodes = end - begin;
  stats.num_edges = e_end - e_begin;
  std::error_code ec;
  if (!fs::create_directory(part_dir, ec)) throw file_error(part_dir, "cannot create: " + ec.message());

  std::vector<int64_t> indptr(c.csc.indptr.begin() + begin, c.csc.indptr.begin() + end + 1);
  for (auto& x : indptr) x -= e_begin;
  write_array(part_dir + "/indptr.bin", indptr);
  Span<const int64_t> indices(c.csc.indices.data() + e_begin, e_end - e_begin);
  Span<const int64_t> edge_ids(c.csc.edge_ids.data() + e_begin, e_end - e_begin);
  write_array(part_dir + "/indices.bin", {stats.num_edges}, indices.data());
  write_array(part_dir + "/edge_ids.bin", {stats.num_edges}, edge_ids.data());
  Span<const int64_t> orig(c.orig_id.data() + begin, stats.num_nodes);
  write_array(part_dir + "/orig_ids.bin", {stats.num_nodes}, orig.data());

  std::vector<int64_t> halo;
  for (int64_t s : indices) {
    if (s < begin || s >= end) halo.push_back(s);
  }
  stats.num_cut_edges = static_cast<int64_t>(halo.size());
  std::sort(halo.begin(), halo.end());
  halo.erase(std::unique(halo.begin(), halo.end()), halo.end());
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
    write_gathered(part_dir + "/edge_attr.bin", d.edge_attr, d.edge_feature_dim, edge_ids);
  }
  if (!d.edge_time.empty()) write_gathered(part_dir + "/edge_time.bin", d.edge_time, 0, edge_ids);
  if (!d.edges.type.empty()) write_gathered(part_dir + "/edge_type.bin", d.edges.type, 0, edge_ids);
  if (d.val_edges.size() > 0 || d.test_edges.size() > 0) {
    stats.num_val_edges = write_edge_split(part_dir, "val", d.val_edges, c.new_id, begin, end);
    stats.num_test_edges = write_edge_split(part_dir, "test", d.test_edges, c.new_id, begin, end);
  }
  return stats;
}

}  // namespace

PartitionMeta write_partitions(const Dataset& d, const std::vector<int32_t>& part_of_node,
                               const PartitionOptions& partition_options, const std::string& dir,
                               const WriteOptions& options) {
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
  StagingDir staging(dir, options.overwrite);
  GlobalCsc csc = build_global_csc(d, new_id);

  PartitionMeta meta = describe_dataset(d);
  meta.num_parts = k;
  meta.method = partition_method_name(partition_options.method);
  meta.seed = partition_options.seed;
  meta.partition_book = book;
  meta.parts.resize(k);

  Progress progress("write partitions", k, "parts");
  WriteContext context{d, new_id, orig_id, csc, book};
  parallel_for(k, std::min(resolve_threads(options.threads), k), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      meta.parts[p] = write_part(context, static_cast<int>(p),
                                 staging.path() + "/part" + std::to_string(p));
      progress.advance();
    }
  });
  write_array(staging.path() + "/partition_book.bin", book);
  write_array(staging.path() + "/node_map.bin", new_id);
  write_meta_json(meta, staging.path() + "/" + kMetaFile);
  staging.commit();
  progress.done();
  return meta;
}

}  // namespace partita
