#include "graph/batch_assembly.h"

#include <algorithm>
#include <utility>

#include "base/error.h"
#include "graph/row_copy.h"

namespace partita {

namespace {

template <typename T>
std::vector<T>& rows_vector(MiniBatch& batch);
template <>
std::vector<float>& rows_vector<float>(MiniBatch& batch) {
  return batch.x;
}
template <>
std::vector<int64_t>& rows_vector<int64_t>(MiniBatch& batch) {
  return batch.y;
}

}  // namespace

const char* rows_name(Rows rows) { return rows == Rows::kX ? "x" : "y"; }

void place_rows(const RowsTarget& target, const char* rows, size_t first, size_t count) {
  RowSource from;
  from.data = rows;
  from.row_bytes = target.row_bytes;
  copy_rows(from, target.positions.data() + first, count, target.base, target.bytes());
}

BatchAssembly::BatchAssembly(const PartitionBook& book, const SamplerConfig& config, const FeatureNames& names,
                             std::vector<PartitionStores> local)
    : book_(book),
      config_(config),
      names_(names),
      local_(std::move(local)),
      builder_(config_.disjoint),
      outputs_(local_.size()) {
  if (local_.size() != static_cast<size_t>(book_.num_parts())) {
    throw UsageError("sampler: " + std::to_string(local_.size()) + " partitions given for a book of " +
                     std::to_string(book_.num_parts()));
  }
  if (config_.num_hops() == 0) throw UsageError("sampler: fanouts: at least one hop is needed");
  for (int part = 0; part < num_parts(); ++part) {
    const PartitionStores& stores = local_[part];
    if (stores.topology == nullptr) continue;
    if (stores.features == nullptr) {
      throw UsageError("sampler: " + part_name(part) + " has a topology but no feature store");
    }
    if (stores.topology->node_begin() != book_.begin(part) || stores.topology->node_end() != book_.end(part)) {
      throw UsageError("sampler: the topology given as " + part_name(part) + " owns nodes [" +
                       std::to_string(stores.topology->node_begin()) + ", " +
                       std::to_string(stores.topology->node_end()) + "), the book says [" +
                       std::to_string(book_.begin(part)) + ", " + std::to_string(book_.end(part)) + ")");
    }
    config_.validate(*stores.topology);
  }
}

void BatchAssembly::start(Span<const int64_t> seeds, const SampleKey& key, MiniBatch batch,
                          Span<const int64_t> seed_times) {
  key_ = key;
  hop_ = 0;
  recycled_ = std::move(batch);
  excluded_.clear();
  builder_.start(seeds, seed_times);
  split_.split(book_, builder_.frontier_nodes(), builder_.frontier_trees(), builder_.frontier_times());
}

void BatchAssembly::exclude_edges(Span<const int64_t> src, Span<const int64_t> dst) {
  if (src.size() != dst.size()) {
    throw Error("exclude edges: " + std::to_string(src.size()) + " sources for " + std::to_string(dst.size()) +
                " destinations");
  }
  const int64_t n = book_.num_nodes();
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] < 0 || src[i] >= n || dst[i] < 0 || dst[i] >= n) {
      throw Error("exclude edges: edge " + std::to_string(src[i]) + " -> " + std::to_string(dst[i]) +
                  " is outside the graph's " + std::to_string(n) + " nodes");
    }
  }
  LinkInput edges;
  edges.src = src;
  edges.dst = dst;
  excluded_.reset(edges, true);
}

void BatchAssembly::sample_local(int part) {
  sample_hop(*local_[part].topology, config_, key_, hop_, split_.input(part), outputs_[part]);
}

void BatchAssembly::finish_hop() {
  std::vector<const HopOutput*> answers(local_.size());
  for (int part = 0; part < num_parts(); ++part) answers[part] = split_.empty(part) ? nullptr : &outputs_[part];
  split_.join(answers, joined_);  // validates every answer against its part's frontier
  excluded_.apply(builder_.frontier_nodes(), joined_);
  builder_.add_hop(joined_);
  if (++hop_ < config_.num_hops()) {
    split_.split(book_, builder_.frontier_nodes(), builder_.frontier_trees(), builder_.frontier_times());
  }
}

void BatchAssembly::start_rows() {
  batch_ = builder_.finish();
  // Keep the caller's buffers and their contents: every row gets overwritten, and resizing
  // a cleared vector would first zero tens of MB.
  batch_.x = std::move(recycled_.x);
  batch_.y = std::move(recycled_.y);
  widths_[0] = widths_[1] = -1;
  rows_.split(book_, batch_.node_ids);  // sampled nodes come from the book's partitions
  // The width of each attribute, from a co-located store, so that rows can land as they come.
  for (Rows rows : {Rows::kX, Rows::kY}) {
    if (!wants(rows)) continue;
    for (int part = 0; part < num_parts() && widths_[static_cast<int>(rows)] < 0; ++part) {
      if (!is_local(part)) continue;
      const ArrayRef* a = local_[part].features->get("node", name_of(rows));
      if (a != nullptr) size_rows(rows, part, a->row_width());
    }
  }
}

void BatchAssembly::size_rows(Rows rows, int part, int64_t width) {
  int64_t& known = widths_[static_cast<int>(rows)];
  if (known >= 0 && width != known) {
    throw Error(part_name(part) + ": attribute 'node/" + name_of(rows) + "' has rows of " + std::to_string(width) +
                " values, other partitions of " + std::to_string(known));
  }
  if (known >= 0) return;
  known = width;
  const size_t values = batch_.node_ids.size() * static_cast<size_t>(width);
  const auto size = [values](auto& v) {
    // Batches vary in size: a quarter of slack keeps a recycled buffer from being
    // reallocated (old rows copied, fresh pages faulted in) whenever one is a bit larger.
    if (v.capacity() < values) {
      v.clear();
      v.reserve(values + values / 4);
    }
    v.resize(values);
  };
  if (rows == Rows::kX) size(batch_.x);
  else size(batch_.y);
}

void BatchAssembly::gather_local(int part) {
  const auto gather = [&](Rows rows, auto tag) {
    using T = decltype(tag);
    const std::string& name = name_of(rows);
    const FeatureStore& store = *local_[part].features;
    const ArrayRef* attribute = store.get("node", name);
    if (attribute == nullptr || attribute->dtype() != dtype_of<T>()) {
      throw Error(part_name(part) + ": no " + std::string(dtype_name(dtype_of<T>())) + " attribute 'node/" + name +
                  "'");
    }
    size_rows(rows, part, attribute->row_width());
    std::vector<T>& out = rows_vector<T>(batch_);
    try {
      if (rows_.ids(part).size() == batch_.node_ids.size()) {
        // Every row, in order: the store's gather (threads, streaming stores) straight in.
        store.gather("node", name, rows_.ids(part), out.data(), out.size() * sizeof(T));
      } else if (store.disk_rows("node", name) != nullptr) {
        // Rows on disk: read this part's into a scratch buffer, then put them in place.
        std::vector<T> rows(rows_.ids(part).size() * static_cast<size_t>(attribute->row_width()));
        store.gather("node", name, rows_.ids(part), rows.data(), rows.size() * sizeof(T));
        rows_.place(part, rows.data(), attribute->row_bytes(), out.data());
      } else {
        RowSource from;
        from.data = static_cast<const char*>(attribute->raw_data());
        from.row_bytes = attribute->row_bytes();
        from.begin = static_cast<uint64_t>(store.node_begin());
        from.rows = static_cast<uint64_t>(store.node_end() - store.node_begin());
        rows_.place_from(part, from, out.data());
      }
    } catch (const Error& e) {
      throw Error(part_name(part) + ": attribute 'node/" + name + "': " + e.what());
    }
  };
  if (rows_.ids(part).empty()) return;
  if (wants(Rows::kX)) gather(Rows::kX, float{});
  if (wants(Rows::kY)) gather(Rows::kY, int64_t{});
}

RowsTarget BatchAssembly::rows_target(int part, Rows rows) {
  const int k = static_cast<int>(rows);
  if (widths_[k] < 0) throw Error(part_name(part) + ": the row width of '" + std::string(rows_name(rows)) + "' is unknown");
  RowsTarget t;
  t.part = part;
  t.rows = rows;
  t.dtype = rows == Rows::kX ? DType::kFloat32 : DType::kInt64;
  t.row_bytes = static_cast<size_t>(widths_[k]) * dtype_size(t.dtype);
  t.base = rows == Rows::kX ? reinterpret_cast<char*>(batch_.x.data()) : reinterpret_cast<char*>(batch_.y.data());
  t.positions = rows_.positions(part);
  return t;
}

MiniBatch BatchAssembly::finish() {
  for (Rows rows : {Rows::kX, Rows::kY}) {
    // Not wanted, or no rows at all (an empty batch): nothing to hold.
    if (widths_[static_cast<int>(rows)] < 0) {
      if (rows == Rows::kX) batch_.x.clear();
      else batch_.y.clear();
    }
  }
  batch_.feature_dim = std::max<int64_t>(widths_[0], 0);
  return std::move(batch_);
}

}  // namespace partita
