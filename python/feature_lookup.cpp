#include "python/feature_lookup.h"

#include <caf/all.hpp>

#include <cstring>
#include <utility>

#include "actors/protocol.h"
#include "base/error.h"
#include "messages/codec.h"
#include "partitioner/partition_format.h"
#include "partitioner/partition_stores.h"
#include "runtime/answered_request.h"

namespace partita::python {

namespace {

constexpr const char* kName = "FeatureStore";

// The node attributes a partition may hold (partition_stores.h: group "node"), in the
// order the store lists them. "type" is a heterogeneous graph's, which the stores give as groups instead.
constexpr const char* kCandidates[] = {"x", "y", "time"};

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t k = 0; k < shape.size(); ++k) text += (k ? ", " : "") + std::to_string(shape[k]);
  return text + "]";
}

std::string transport_failure(caf::actor_system& system, const caf::error& e, std::chrono::milliseconds deadline) {
  return e == caf::sec::request_timeout ? "no answer within " + std::to_string(deadline.count()) + " ms"
                                        : system.render(e);
}

}  // namespace

FeatureLookup::FeatureLookup(std::shared_ptr<const GraphHandle> graph, std::chrono::milliseconds deadline,
                             const std::string& features)
    : graph_(std::move(graph)), deadline_(deadline) {
  if (!graph_) throw UsageError(std::string(kName) + ": graph is None");
  const int parts = graph_->meta().num_parts;
  if (parts < 1) throw Error(std::string(kName) + ": '" + graph_->dir() + "' has no parts");
  parse_feature_storage(features, std::string(kName) + ": features");  // before any actor is spawned
  requests_.reset(new std::atomic<int64_t>[static_cast<size_t>(parts)]);
  for (int p = 0; p < parts; ++p) requests_[p] = 0;
  EmbeddedRuntime::instance().attach(this, kName, [&](runtime::Runtime& rt) {
    {
      std::lock_guard<std::mutex> actors(actors_mutex_);
      owner_ = spawn_owner(rt.system());
      partitions_.resize(static_cast<size_t>(parts));
    }
    // As a job places them (training/job_driver.cpp): partition p on node p mod D. The
    // fanouts are the actor type's required setting; no hop request is ever sent.
    for (int p = 0; p < parts; ++p) {
      const runtime::Settings settings{
          {"dir", graph_->dir()}, {"part", std::to_string(p)}, {"fanouts", "1"}, {"features", features}};
      try {
        caf::actor a = rt.spawn(p % rt.num_nodes(), "partition", settings, owner_);
        std::lock_guard<std::mutex> actors(actors_mutex_);
        partitions_[p] = std::move(a);
      } catch (const UsageError& e) {
        throw UsageError(std::string(kName) + ": " + e.what());
      } catch (const Error& e) {
        throw Error(std::string(kName) + ": " + e.what());
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    system_ = &rt.system();
  });
  try {
    // Which attributes there are, and their rows: a request of no rows for each.
    std::lock_guard<std::mutex> lock(mutex_);
    check_open();
    caf::scoped_actor self{*system_};
    const partition_actor part0 = caf::actor_cast<partition_actor>(partitions_[0]);
    for (const char* name : kCandidates) {
      Encoded request;
      Encoder().feature_request(next_request_id_++, "node", name, Span<const int64_t>(), request.bytes);
      std::string failure;
      bool absent = false;
      NodeAttribute attribute;
      attribute.name = name;
      runtime::receive_reply(
          self, self->request(part0, deadline_, feature_atom::value, std::move(request)),
          [&](Encoded& reply) {
            try {
              const DecodedFeatureReply r = decode_feature_reply(Span<const char>(reply.bytes), 0);
              attribute.dtype = r.values.dtype;
              attribute.row_shape.assign(r.values.shape.begin() + (r.values.shape.empty() ? 0 : 1),
                                         r.values.shape.end());
            } catch (const RemoteError& e) {
              if (e.code() == WireErrorCode::kNotFound) {
                absent = true;
              } else {
                failure = e.what();
              }
            } catch (const Error& e) {
              failure = e.what();
            }
          },
          [&](caf::error& e) { failure = transport_failure(*system_, e, deadline_); });
      if (!failure.empty()) throw Error(std::string(kName) + ": partition 0: attribute '" + name + "': " + failure);
      if (absent) continue;
      attribute.row_bytes = dtype_size(attribute.dtype);
      for (int64_t d : attribute.row_shape) attribute.row_bytes *= static_cast<size_t>(d);
      attributes_.push_back(std::move(attribute));
    }
  } catch (...) {
    EmbeddedRuntime::instance().detach(this);
    close();
    throw;
  }
}

FeatureLookup::~FeatureLookup() {
  EmbeddedRuntime::instance().detach(this);
  close();
}

const NodeAttribute& FeatureLookup::attribute(const std::string& name) const {
  std::string names;
  for (const NodeAttribute& a : attributes_) {
    if (a.name == name) return a;
    names += (names.empty() ? "" : ", ") + a.name;
  }
  throw UsageError(std::string(kName) + ": the partitions of '" + graph_->dir() + "' have no node attribute '" +
                   name + "' (they have: " + (names.empty() ? std::string("none") : names) + ")");
}

std::vector<int64_t> FeatureLookup::requests_per_part() const {
  std::vector<int64_t> counts;
  for (int p = 0; p < graph_->meta().num_parts; ++p) counts.push_back(requests_[p].load());
  return counts;
}

void FeatureLookup::check_open() const {
  std::lock_guard<std::mutex> actors(actors_mutex_);
  if (closed_.empty()) return;
  if (runtime_gone_) throw RuntimeClosed(closed_);
  throw Error(closed_);
}

template <class Take>
void FeatureLookup::ask(const std::vector<int>& parts, std::vector<std::vector<char>>& requests,
                        const std::vector<size_t>& counts, const NodeAttribute* expected, Take take) {
  caf::scoped_actor self{*system_};
  using Handle = decltype(self->request(partition_actor(), deadline_, feature_atom::value, Encoded()));
  std::vector<Handle> handles;
  handles.reserve(parts.size());
  for (size_t k = 0; k < parts.size(); ++k) {
    requests_[parts[k]].fetch_add(1);
    handles.push_back(self->request(caf::actor_cast<partition_actor>(partitions_[parts[k]]), deadline_,
                                    feature_atom::value, Encoded{std::move(requests[k])}));
  }
  // Every reply is received, the failed ones too, so that none is left for the clock.
  std::string failure;
  for (size_t k = 0; k < handles.size(); ++k) {
    std::string why;
    runtime::receive_reply(
        self, std::move(handles[k]),
        [&](Encoded& reply) {
          try {
            const DecodedFeatureReply r =
                decode_feature_reply(Span<const char>(reply.bytes), static_cast<int64_t>(counts[k]));
            std::vector<int64_t> row_shape(r.values.shape.begin() + 1, r.values.shape.end());
            if (r.values.dtype != expected->dtype || row_shape != expected->row_shape ||
                r.values.bytes != counts[k] * expected->row_bytes) {
              throw Error("the reply's rows are " + std::string(dtype_name(r.values.dtype)) + " " +
                          shape_text(r.values.shape) + ", expected " + std::string(dtype_name(expected->dtype)) +
                          " rows of " + shape_text(expected->row_shape));
            }
            take(k, static_cast<const char*>(r.values.data));
          } catch (const Error& e) {
            why = e.what();
          }
        },
        [&](caf::error& e) { why = transport_failure(*system_, e, deadline_); });
    if (failure.empty() && !why.empty()) {
      failure = std::string(kName) + ": partition " + std::to_string(parts[k]) + ": attribute '" + expected->name +
                "': " + why;
    }
  }
  if (!failure.empty()) throw Error(failure);
}

void FeatureLookup::get(const std::string& name, const std::vector<int64_t>& ids, std::vector<char>& out) {
  const NodeAttribute& a = attribute(name);
  std::vector<int64_t> global = ids;
  graph_->to_global(global, std::string(kName) + " '" + name + "'");
  const PartitionBook& book = graph_->book();
  const int parts = book.num_parts();
  // Each part's ids and where their rows go, in the caller's order.
  std::vector<std::vector<int64_t>> part_ids(static_cast<size_t>(parts));
  std::vector<std::vector<size_t>> part_positions(static_cast<size_t>(parts));
  for (size_t k = 0; k < global.size(); ++k) {
    const int p = book.owner(global[k]);
    part_ids[p].push_back(global[k]);
    part_positions[p].push_back(k);
  }
  out.resize(global.size() * a.row_bytes);
  if (global.empty()) return;
  const size_t chunk = std::max<size_t>(1, a.row_bytes ? kMaxRequestBytes / a.row_bytes : global.size());

  std::lock_guard<std::mutex> lock(mutex_);
  check_open();
  std::vector<int> to;
  std::vector<std::vector<char>> requests;
  std::vector<size_t> counts;
  std::vector<const size_t*> positions;  // of each request's first row
  Encoder encoder;
  for (int p = 0; p < parts; ++p) {
    for (size_t begin = 0; begin < part_ids[p].size(); begin += chunk) {
      const size_t rows = std::min(chunk, part_ids[p].size() - begin);
      requests.emplace_back();
      encoder.feature_request(next_request_id_++, "node", name, Span<const int64_t>(part_ids[p].data() + begin, rows),
                              requests.back());
      to.push_back(p);
      counts.push_back(rows);
      positions.push_back(part_positions[p].data() + begin);
    }
  }
  try {
    ask(to, requests, counts, &a, [&](size_t k, const char* rows) {
      char* base = out.data();
      const size_t width = a.row_bytes;
      for (size_t i = 0; i < counts[k]; ++i) std::memcpy(base + positions[k][i] * width, rows + i * width, width);
    });
  } catch (const Error&) {
    check_open();  // released by a close: say so, rather than how the actor went
    throw;
  }
}

void FeatureLookup::close() { close_with(std::string(kName) + ": closed", false); }

void FeatureLookup::close_for_shutdown() {
  close_with(std::string(kName) +
                 ": the partita runtime was shut down (partita.shutdown()); after partita.init() make a new store",
             true);
}

void FeatureLookup::close_with(const std::string& why, bool runtime_gone) {
  {
    // First without waiting: a caller blocked in get() holds mutex_ until its partitions
    // answer, which they do at once as they exit.
    std::lock_guard<std::mutex> actors(actors_mutex_);
    if (closed_.empty()) {
      closed_ = why;
      runtime_gone_ = runtime_gone;
    }
    for (const caf::actor& a : partitions_) {
      if (a) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    }
    if (owner_) caf::anon_send_exit(owner_, caf::exit_reason::user_shutdown);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  system_ = nullptr;
  std::lock_guard<std::mutex> actors(actors_mutex_);
  partitions_.clear();
  owner_ = caf::actor();
}

std::vector<int64_t> original_edge_index(const GraphHandle& graph) {
  const int64_t n = graph.meta().num_nodes;
  const int64_t m = graph.meta().num_edges;
  const std::vector<int64_t>& original = graph.original_of();
  std::vector<int64_t> out(static_cast<size_t>(2 * m), -1);
  int64_t* src = out.data();
  int64_t* dst = out.data() + m;
  const PartitionFolder folder(graph.dir());
  int64_t placed = 0;
  for (int p = 0; p < graph.meta().num_parts; ++p) {
    const PartitionData data = folder.load_part(p);
    Span<const int64_t> indptr = data.indptr.as<int64_t>();
    Span<const int64_t> indices = data.indices.as<int64_t>();
    Span<const int64_t> edges = data.edge_ids.as<int64_t>();
    for (int64_t j = 0; j + 1 < static_cast<int64_t>(indptr.size()); ++j) {
      const int64_t to = original[data.node_begin + j];
      for (int64_t k = indptr[j]; k < indptr[j + 1]; ++k) {
        const int64_t e = edges[k];
        const int64_t from = indices[k];
        if (e < 0 || e >= m || dst[e] != -1) {
          throw file_error(data.edge_ids.path(), "original edge id " + std::to_string(e) +
                                                     (e < 0 || e >= m ? " is outside the graph's " + std::to_string(m) +
                                                                            " edges"
                                                                      : " appears more than once"));
        }
        if (from < 0 || from >= n) {
          throw file_error(data.indices.path(), "source " + std::to_string(from) + " is outside the graph's " +
                                                    std::to_string(n) + " nodes");
        }
        src[e] = original[from];
        dst[e] = to;
        ++placed;
      }
    }
  }
  if (placed != m) {
    throw file_error(graph.dir() + "/" + kMetaFile, "num_edges " + std::to_string(m) + " disagrees with the parts' " +
                                                        std::to_string(placed) + " edges");
  }
  return out;
}

}  // namespace partita::python
