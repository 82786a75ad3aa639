#include "actors/distributed_sampler.h"

#include <caf/all.hpp>

#include <optional>
#include <string>
#include <utility>

#include "base/error.h"

namespace partita {

namespace {

std::string part_name(int part) { return "partition " + std::to_string(part); }

// One round of requests to remote partitions: all are sent before any reply is awaited, so
// the partitions work in parallel (and alongside the caller's local work between send()
// and collect()). Each request has the deadline, counted from its sending.
template <typename Atom>
class Exchange {
 public:
  Exchange(caf::actor_system& system, std::chrono::milliseconds deadline, const char* what)
      : system_(system), deadline_(deadline), what_(what) {}

  void send(int part, const partition_actor& actor, Encoded request) {
    if (!self_) self_.emplace(system_);
    parts_.push_back(part);
    handles_.push_back((*self_)->request(actor, deadline_, Atom::value, std::move(request)));
  }

  // The replies, in the order sent. Throws Error naming the first partition (in that
  // order) that failed to answer.
  std::vector<Encoded> collect() {
    std::vector<Encoded> replies(handles_.size());
    for (size_t i = 0; i < handles_.size(); ++i) {
      std::string failure;
      handles_[i].receive([&](Encoded& reply) { replies[i] = std::move(reply); },
                          [&](caf::error& err) {
                            failure = err == caf::sec::request_timeout
                                          ? "no reply within " + std::to_string(deadline_.count()) + " ms"
                                          : system_.render(err);
                          });
      if (!failure.empty()) throw Error(part_name(parts_[i]) + ": " + what_ + " failed: " + failure);
    }
    return replies;
  }

  int part(size_t i) const { return parts_[i]; }
  size_t size() const { return parts_.size(); }

 private:
  using Handle = decltype(std::declval<caf::scoped_actor&>()->request(
      std::declval<const partition_actor&>(), std::chrono::milliseconds(0), Atom::value, std::declval<Encoded>()));

  caf::actor_system& system_;
  // A fresh blocking actor per round (none when every part is co-located): a reply that
  // arrives after its deadline lands in a mailbox that is already gone instead of lingering
  // for later rounds.
  std::optional<caf::scoped_actor> self_;
  std::chrono::milliseconds deadline_;
  const char* what_;
  std::vector<int> parts_;
  std::vector<Handle> handles_;
};

Span<const char> bytes_of(const Encoded& message) {
  return Span<const char>(message.bytes.data(), message.bytes.size());
}

}  // namespace

PartitionRef PartitionRef::local(std::shared_ptr<const Topology> topology,
                                 std::shared_ptr<const FeatureStore> features) {
  PartitionRef ref;
  ref.topology = std::move(topology);
  ref.features = std::move(features);
  return ref;
}

PartitionRef PartitionRef::remote(partition_actor actor) {
  PartitionRef ref;
  ref.actor = std::move(actor);
  return ref;
}

DistributedSampler::DistributedSampler(caf::actor_system& system, PartitionBook book,
                                       std::vector<PartitionRef> parts, SamplerConfig config,
                                       std::chrono::milliseconds deadline, FeatureNames names)
    : system_(system),
      book_(std::move(book)),
      parts_(std::move(parts)),
      config_(std::move(config)),
      deadline_(deadline),
      names_(std::move(names)),
      builder_(config_.disjoint),
      outputs_(parts_.size()) {
  if (parts_.size() != static_cast<size_t>(book_.num_parts())) {
    throw UsageError("distributed sampler: " + std::to_string(parts_.size()) + " partitions given for a book of " +
                     std::to_string(book_.num_parts()));
  }
  if (config_.num_hops() == 0) throw UsageError("distributed sampler: fanouts: at least one hop is needed");
  for (size_t p = 0; p < parts_.size(); ++p) {
    const PartitionRef& ref = parts_[p];
    const int part = static_cast<int>(p);
    if (!ref.is_local()) {
      if (!ref.actor) throw UsageError("distributed sampler: " + part_name(part) + " has neither stores nor an actor");
      continue;
    }
    if (!ref.features) throw UsageError("distributed sampler: " + part_name(part) + " has a topology but no feature store");
    if (ref.topology->node_begin() != book_.begin(part) || ref.topology->node_end() != book_.end(part)) {
      throw UsageError("distributed sampler: the topology given as " + part_name(part) + " owns nodes [" +
                       std::to_string(ref.topology->node_begin()) + ", " + std::to_string(ref.topology->node_end()) +
                       "), the book says [" + std::to_string(book_.begin(part)) + ", " +
                       std::to_string(book_.end(part)) + ")");
    }
    config_.validate(*ref.topology);
  }
}

DistributedSampler::~DistributedSampler() = default;

MiniBatch DistributedSampler::sample(Span<const int64_t> seeds, const SampleKey& key, Span<const int64_t> seed_times) {
  MiniBatch batch;
  sample_into(seeds, key, batch, seed_times);
  return batch;
}

void DistributedSampler::sample_into(Span<const int64_t> seeds, const SampleKey& key, MiniBatch& batch,
                                     Span<const int64_t> seed_times) {
  builder_.start(seeds, seed_times);
  std::vector<const HopOutput*> answers(parts_.size());
  for (int hop = 0; hop < config_.num_hops(); ++hop) {
    split_.split(book_, builder_.frontier_nodes(), builder_.frontier_trees(), builder_.frontier_times());
    sample_hop_parts(key, hop);
    for (size_t p = 0; p < parts_.size(); ++p) {
      answers[p] = split_.empty(static_cast<int>(p)) ? nullptr : &outputs_[p];
    }
    split_.join(answers, joined_);
    builder_.add_hop(joined_);
  }
  // The feature matrix is the batch's largest buffer (tens of MB): keep the caller's, whose
  // pages are already mapped, instead of faulting in a fresh one every batch.
  std::vector<float> x = std::move(batch.x);
  std::vector<int64_t> y = std::move(batch.y);
  batch = builder_.finish();
  batch.x = std::move(x);
  batch.y = std::move(y);
  batch.x.clear();
  batch.y.clear();
  if (names_.x.empty() && names_.y.empty()) return;
  rows_.split(book_, batch.node_ids);
  if (!names_.x.empty()) batch.feature_dim = fetch(names_.x, batch.x);
  if (!names_.y.empty()) fetch(names_.y, batch.y);
}

void DistributedSampler::sample_hop_parts(const SampleKey& key, int hop) {
  Exchange<hop_atom> exchange(system_, deadline_, "hop request");
  std::vector<uint64_t> ids;
  for (size_t p = 0; p < parts_.size(); ++p) {
    const int part = static_cast<int>(p);
    if (split_.empty(part) || parts_[p].is_local()) continue;
    Encoded request;
    ids.push_back(next_request_id_++);
    encoder_.hop_request(ids.back(), key, hop, split_.input(part), config_.fingerprint(),
                         request.bytes);
    exchange.send(part, parts_[p].actor, std::move(request));
  }
  // The co-located parts are sampled while the remote ones work.
  for (size_t p = 0; p < parts_.size(); ++p) {
    const int part = static_cast<int>(p);
    if (split_.empty(part) || !parts_[p].is_local()) continue;
    sample_hop(*parts_[p].topology, config_, key, hop, split_.input(part), outputs_[p]);
  }
  std::vector<Encoded> replies = exchange.collect();
  for (size_t i = 0; i < replies.size(); ++i) {
    const int part = exchange.part(i);
    DecodedHopReply reply;
    try {
      reply = decode_hop_reply(bytes_of(replies[i]), static_cast<int64_t>(split_.input(part).nodes.size()));
    } catch (const Error& e) {
      throw Error(part_name(part) + ": hop request failed: " + e.what());
    }
    if (reply.request_id != ids[i]) {
      throw Error(part_name(part) + ": hop reply to request " + std::to_string(reply.request_id) + ", expected " +
                  std::to_string(ids[i]));
    }
    // FrontierSplit joins owned outputs; the copy is of this hop's answer only, the
    // smallest part of a batch.
    HopOutput& out = outputs_[part];
    out.offsets.assign(reply.offsets.begin(), reply.offsets.end());
    out.neighbors.assign(reply.neighbors.begin(), reply.neighbors.end());
    out.edge_ids.assign(reply.edge_ids.begin(), reply.edge_ids.end());
    out.edge_types.assign(reply.edge_types.begin(), reply.edge_types.end());
  }
}

template <typename T>
int64_t DistributedSampler::fetch(const std::string& name, std::vector<T>& out) {
  Exchange<feature_atom> exchange(system_, deadline_, "feature request");
  std::vector<uint64_t> ids;
  for (int part = 0; part < rows_.num_parts(); ++part) {
    if (rows_.ids(part).empty() || parts_[part].is_local()) continue;
    Encoded request;
    ids.push_back(next_request_id_++);
    encoder_.feature_request(ids.back(), "node", name, rows_.ids(part), request.bytes);
    exchange.send(part, parts_[part].actor, std::move(request));
  }

  // Each part's rows, wherever they are: a co-located store's own memory or a reply buffer.
  std::vector<Span<const T>> rows(parts_.size());
  int64_t width = -1;
  const auto agree = [&](int part, int64_t w) {
    if (width >= 0 && w != width) {
      throw Error(part_name(part) + ": attribute 'node/" + name + "' has rows of " + std::to_string(w) +
                  " values, other partitions of " + std::to_string(width));
    }
    width = w;
  };
  scratch_.resize(parts_.size());
  for (int part = 0; part < rows_.num_parts(); ++part) {
    if (rows_.ids(part).empty() || !parts_[part].is_local()) continue;
    const ArrayRef* attribute = parts_[part].features->get("node", name);
    if (attribute == nullptr || attribute->dtype() != dtype_of<T>()) {
      throw Error(part_name(part) + ": no " + std::string(dtype_name(dtype_of<T>())) + " attribute 'node/" + name + "'");
    }
    const size_t n = rows_.ids(part).size();
    agree(part, attribute->row_width());
    // One co-located part holding every row (in order) gathers straight into the batch.
    const bool only_part = n == rows_.size();
    std::vector<char>& buffer = scratch_[part];  // reused: no fresh pages per batch
    if (only_part) {
      out.resize(n * static_cast<size_t>(width));
    } else {
      buffer.resize(n * attribute->row_bytes());
    }
    try {
      parts_[part].features->gather("node", name, rows_.ids(part),
                                    only_part ? static_cast<void*>(out.data()) : buffer.data(),
                                    only_part ? out.size() * sizeof(T) : buffer.size());
    } catch (const Error& e) {
      throw Error(part_name(part) + ": " + e.what());
    }
    if (only_part) return width;
    rows[part] = Span<const T>(reinterpret_cast<const T*>(buffer.data()), buffer.size() / sizeof(T));
  }

  std::vector<Encoded> replies = exchange.collect();
  std::vector<DecodedFeatureReply> decoded(replies.size());
  for (size_t i = 0; i < replies.size(); ++i) {
    const int part = exchange.part(i);
    const size_t n = rows_.ids(part).size();
    try {
      decoded[i] = decode_feature_reply(bytes_of(replies[i]), static_cast<int64_t>(n));
      if (decoded[i].request_id != ids[i]) {
        throw Error("reply to request " + std::to_string(decoded[i].request_id) + ", expected " +
                    std::to_string(ids[i]));
      }
      rows[part] = decoded[i].values.as<T>(("attribute 'node/" + name + "'").c_str());
    } catch (const Error& e) {
      throw Error(part_name(part) + ": feature request failed: " + e.what());
    }
    agree(part, static_cast<int64_t>(rows[part].size() / n));
  }

  if (width < 0) width = 0;  // no rows at all
  out.resize(rows_.size() * static_cast<size_t>(width));
  const size_t row_bytes = static_cast<size_t>(width) * sizeof(T);
  for (int part = 0; part < rows_.num_parts(); ++part) {
    if (!rows_.ids(part).empty()) rows_.place(part, rows[part].data(), row_bytes, out.data());
  }
  return width;
}

}  // namespace partita
