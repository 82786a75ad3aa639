#include "actors/sampler_steps.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <cstring>
#include <utility>

#include "base/error.h"

namespace partita {

namespace {

const char* rows_name(Rows rows) { return rows == Rows::kX ? "x" : "y"; }

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

// Rows to copy: row k is base + (ids[k] - begin) * row_bytes, or base + k * row_bytes
// without ids.
struct RowsFrom {
  const char* base;
  size_t row_bytes;
  const int64_t* ids = nullptr;
  int64_t begin = 0;
  const char* row(size_t k) const {
    return base + (ids != nullptr ? static_cast<size_t>(ids[k] - begin) : k) * row_bytes;
  }
};

// Copies row k of `from` to row positions[k] of `out`, for k < n.
void copy_rows_plain(const RowsFrom& from, const int64_t* positions, size_t n, char* out) {
  for (size_t k = 0; k < n; ++k) {
    std::memcpy(out + static_cast<size_t>(positions[k]) * from.row_bytes, from.row(k), from.row_bytes);
  }
}

#if defined(__x86_64__)
// The same with the whole 64-byte lines of each destination row written by streaming
// stores: a batch's rows land all over tens of MB, so every plain store would first read
// its line from memory (read-for-ownership) only to overwrite it. Measured on 512-byte rows
// scattered into a 29 MB batch: about twice as fast. The partial lines at either end of a
// row (batch buffers are not 64-byte aligned) use plain stores.
__attribute__((target("avx512f"))) void copy_rows_streaming(const RowsFrom& from, const int64_t* positions, size_t n,
                                                          char* out) {
  const size_t row_bytes = from.row_bytes;
  for (size_t k = 0; k < n; ++k) {
    const char* src = from.row(k);
    char* to = out + static_cast<size_t>(positions[k]) * row_bytes;
    char* lines = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(to) + 63) & ~uintptr_t{63});
    char* lines_end = reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(to + row_bytes) & ~uintptr_t{63});
    std::memcpy(to, src, static_cast<size_t>(lines - to));
    for (char* line = lines; line < lines_end; line += 64) {
      _mm512_stream_si512(reinterpret_cast<__m512i*>(line), _mm512_loadu_si512(src + (line - to)));
    }
    std::memcpy(lines_end, src + (lines_end - to), static_cast<size_t>(to + row_bytes - lines_end));
  }
  // Streaming stores are weakly ordered: make them visible to whoever synchronises with
  // this thread next, as plain stores would be.
  _mm_sfence();
}
#endif

// `total_bytes`: of all the rows this copy is part of, which decides whether they would stay
// in cache anyway.
void copy_rows(const RowsFrom& from, const int64_t* positions, size_t n, char* out, size_t total_bytes = 0) {
#if defined(__x86_64__)
  // Rows wide enough to hold whole lines, and enough of them to overflow the cache anyway.
  static const bool can_stream = __builtin_cpu_supports("avx512f");
  if (can_stream && from.row_bytes >= 128 && std::max(total_bytes, n * from.row_bytes) >= (size_t{1} << 20)) {
    copy_rows_streaming(from, positions, n, out);
    return;
  }
#endif
  copy_rows_plain(from, positions, n, out);
}

// Copies rows `ids` of `attribute` (owned ids [begin, end)) to rows `positions` of `out`.
void scatter_rows(const ArrayRef& attribute, int64_t begin, int64_t end, Span<const int64_t> ids,
                  const std::vector<int64_t>& positions, char* out, const std::string& what) {
  for (int64_t id : ids) {
    if (id < begin || id >= end) {
      throw Error(what + ": node " + std::to_string(id) + " is outside [" + std::to_string(begin) + ", " +
                  std::to_string(end) + ")");
    }
  }
  RowsFrom from{static_cast<const char*>(attribute.raw_data()), attribute.row_bytes(), ids.data(), begin};
  copy_rows(from, positions.data(), ids.size(), out);
}

}  // namespace

std::string part_name(int part) { return "partition " + std::to_string(part); }

BatchAssembly::BatchAssembly(const PartitionBook& book, const SamplerConfig& config, const FeatureNames& names,
                             std::vector<PartitionStores> local)
    : book_(book),
      config_(config),
      names_(names),
      local_(std::move(local)),
      builder_(config_.disjoint),
      outputs_(local_.size()),
      row_ids_(local_.size()),
      row_positions_(local_.size()) {
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
  builder_.start(seeds, seed_times);
  split_.split(book_, builder_.frontier_nodes(), builder_.frontier_trees(), builder_.frontier_times());
}

void BatchAssembly::sample_local(int part) {
  sample_hop(*local_[part].topology, config_, key_, hop_, split_.input(part), outputs_[part]);
}

void BatchAssembly::hop_request(int part, uint64_t request_id, Encoder& encoder, std::vector<char>& out) const {
  encoder.hop_request(request_id, key_, hop_, split_.input(part), config_.fingerprint(), out);
}

void BatchAssembly::take_hop_reply(int part, uint64_t request_id, Span<const char> bytes) {
  DecodedHopReply reply;
  try {
    reply = decode_hop_reply(bytes, static_cast<int64_t>(split_.input(part).nodes.size()));
  } catch (const Error& e) {
    throw Error(part_name(part) + ": hop request failed: " + e.what());
  }
  if (reply.request_id != request_id) {
    throw Error(part_name(part) + ": hop reply to request " + std::to_string(reply.request_id) + ", expected " +
                std::to_string(request_id));
  }
  // FrontierSplit joins owned outputs; the copy is of this hop's answer only, a small part
  // of a batch.
  HopOutput& out = outputs_[part];
  out.offsets.assign(reply.offsets.begin(), reply.offsets.end());
  out.neighbors.assign(reply.neighbors.begin(), reply.neighbors.end());
  out.edge_ids.assign(reply.edge_ids.begin(), reply.edge_ids.end());
  out.edge_types.assign(reply.edge_types.begin(), reply.edge_types.end());
}

void BatchAssembly::finish_hop() {
  std::vector<const HopOutput*> answers(local_.size());
  for (int part = 0; part < num_parts(); ++part) answers[part] = split_.empty(part) ? nullptr : &outputs_[part];
  split_.join(answers, joined_);
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
  for (auto& ids : row_ids_) ids.clear();
  for (auto& positions : row_positions_) positions.clear();
  for (size_t i = 0; i < batch_.node_ids.size(); ++i) {
    const int64_t id = batch_.node_ids[i];
    const int part = book_.owner(id);  // sampled nodes come from the book's partitions
    row_ids_[part].push_back(id);
    row_positions_[part].push_back(static_cast<int64_t>(i));
  }
  // The width of each attribute, from a co-located store, so that rows can land as they come.
  for (Rows rows : {Rows::kX, Rows::kY}) {
    if (!wants(rows)) continue;
    for (int part = 0; part < num_parts() && widths_[static_cast<int>(rows)] < 0; ++part) {
      if (!is_local(part)) continue;
      const ArrayRef* a = local_[part].features->get("node", rows == Rows::kX ? names_.x : names_.y);
      if (a != nullptr) size_rows(rows, part, a->row_width());
    }
  }
}

void BatchAssembly::size_rows(Rows rows, int part, int64_t width) {
  int64_t& known = widths_[static_cast<int>(rows)];
  const std::string& name = rows == Rows::kX ? names_.x : names_.y;
  if (known >= 0 && width != known) {
    throw Error(part_name(part) + ": attribute 'node/" + name + "' has rows of " + std::to_string(width) +
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
    const std::string& name = rows == Rows::kX ? names_.x : names_.y;
    const FeatureStore& store = *local_[part].features;
    const ArrayRef* attribute = store.get("node", name);
    if (attribute == nullptr || attribute->dtype() != dtype_of<T>()) {
      throw Error(part_name(part) + ": no " + std::string(dtype_name(dtype_of<T>())) + " attribute 'node/" + name +
                  "'");
    }
    size_rows(rows, part, attribute->row_width());
    std::vector<T>& out = rows_vector<T>(batch_);
    const std::vector<int64_t>& ids = row_ids_[part];
    try {
      if (ids.size() == batch_.node_ids.size()) {
        // Every row, in order: the store's gather (threads, streaming stores) straight in.
        store.gather("node", name, ids, out.data(), out.size() * sizeof(T));
      } else {
        scatter_rows(*attribute, store.node_begin(), store.node_end(), ids, row_positions_[part],
                     reinterpret_cast<char*>(out.data()), "attribute 'node/" + name + "'");
      }
    } catch (const Error& e) {
      throw Error(part_name(part) + ": " + e.what());
    }
  };
  if (row_ids_[part].empty()) return;
  if (wants(Rows::kX)) gather(Rows::kX, float{});
  if (wants(Rows::kY)) gather(Rows::kY, int64_t{});
}

void BatchAssembly::feature_request(int part, Rows rows, uint64_t request_id, Encoder& encoder,
                                    std::vector<char>& out) const {
  encoder.feature_request(request_id, "node", rows == Rows::kX ? names_.x : names_.y, rows_of(part), out);
}

size_t BatchAssembly::take_feature_reply(int part, Rows rows, uint64_t request_id, Span<const char> bytes) {
  const size_t n = row_ids_[part].size();
  const std::string& name = rows == Rows::kX ? names_.x : names_.y;
  const auto place = [&](auto tag) -> size_t {
    using T = decltype(tag);
    DecodedFeatureReply reply;
    Span<const T> values;
    try {
      reply = decode_feature_reply(bytes, static_cast<int64_t>(n));
      if (reply.request_id != request_id) {
        throw Error("reply to request " + std::to_string(reply.request_id) + ", expected " +
                    std::to_string(request_id));
      }
      values = reply.values.as<T>(("attribute 'node/" + name + "'").c_str());
    } catch (const Error& e) {
      throw Error(part_name(part) + ": feature request (" + rows_name(rows) + ") failed: " + e.what());
    }
    if (n == 0) return 0;
    size_rows(rows, part, static_cast<int64_t>(values.size() / n));
    const size_t row_bytes = values.size() / n * sizeof(T);
    RowsFrom from{reinterpret_cast<const char*>(values.data()), row_bytes};
    copy_rows(from, row_positions_[part].data(), n, reinterpret_cast<char*>(rows_vector<T>(batch_).data()));
    return values.size() * sizeof(T);
  };
  return rows == Rows::kX ? place(float{}) : place(int64_t{});
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
  t.positions = Span<const int64_t>(row_positions_[part]);
  return t;
}

void check_rows_header(const RowsTarget& target, uint64_t request_id, Span<const char> head, uint64_t body_bytes) {
  const std::string what = part_name(target.part) + ": feature request (" + rows_name(target.rows) + ") failed: ";
  DecodedFeatureRowsHeader h;
  try {
    h = decode_feature_rows_header(head, static_cast<int64_t>(target.positions.size()));
  } catch (const Error& e) {
    throw Error(what + e.what());
  }
  if (h.request_id != request_id) {
    throw Error(what + "reply to request " + std::to_string(h.request_id) + ", expected " + std::to_string(request_id));
  }
  if (h.dtype != target.dtype) {
    throw Error(what + "rows of " + std::string(dtype_name(h.dtype)) + ", expected " +
                std::string(dtype_name(target.dtype)));
  }
  if (h.bytes != target.bytes() || body_bytes != h.bytes) {
    throw Error(what + std::to_string(h.bytes) + " bytes of rows (" + std::to_string(body_bytes) + " sent), expected " +
                std::to_string(target.bytes()) + ": rows of another width than other partitions'");
  }
}

void place_rows(const RowsTarget& target, const char* rows, size_t first, size_t count) {
  copy_rows(RowsFrom{rows, target.row_bytes}, target.positions.data() + first, count, target.base, target.bytes());
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
