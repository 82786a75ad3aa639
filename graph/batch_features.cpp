#include "graph/batch_features.h"

#include "base/error.h"
#include "graph/row_split.h"

namespace partita {

namespace {

// The common case needs no split: one store owns every node, gather straight into `out`.
template <typename T>
void fetch(const std::string& name, const MiniBatch& batch, const PartitionBook& book,
           const std::vector<const FeatureStore*>& stores, int threads, int64_t width,
           std::vector<T>& out) {
  out.resize(batch.node_ids.size() * static_cast<size_t>(width));
  const size_t row_bytes = static_cast<size_t>(width) * sizeof(T);
  if (stores.size() == 1) {
    stores[0]->gather("node", name, batch.node_ids, out.data(), out.size() * sizeof(T), threads);
    return;
  }
  RowSplit split;
  split.split(book, batch.node_ids);
  std::vector<T> rows;
  for (int p = 0; p < split.num_parts(); ++p) {
    Span<const int64_t> ids = split.ids(p);
    if (ids.empty()) continue;
    rows.resize(ids.size() * static_cast<size_t>(width));
    stores[p]->gather("node", name, ids, rows.data(), rows.size() * sizeof(T), threads);
    split.place(p, rows.data(), row_bytes, out.data());
  }
}

const ArrayRef& attribute(const std::vector<const FeatureStore*>& stores, const std::string& name) {
  const ArrayRef* a = stores.at(0)->get("node", name);
  if (a == nullptr) throw Error("features: the partition stores have no node attribute '" + name + "'");
  return *a;
}

}  // namespace

void attach_features(MiniBatch& batch, const PartitionBook& book,
                     const std::vector<const FeatureStore*>& stores, const FeatureNames& names,
                     int threads) {
  if (stores.size() != static_cast<size_t>(book.num_parts())) {
    throw Error("features: " + std::to_string(stores.size()) + " stores for " +
                std::to_string(book.num_parts()) + " partitions");
  }
  if (!names.x.empty()) {
    batch.feature_dim = attribute(stores, names.x).row_width();
    fetch(names.x, batch, book, stores, threads, batch.feature_dim, batch.x);
  }
  if (!names.y.empty()) fetch(names.y, batch, book, stores, threads, 1, batch.y);
}

}  // namespace partita
