#include "embeddings/kg_triples.h"

#include <algorithm>
#include <set>

#include "base/error.h"
#include "base/random.h"

namespace partita {

namespace {

// The first column of an edge feature array [k, width] (a rating), or nothing.
std::vector<float> first_column(const std::optional<MappedArray>& attr) {
  if (!attr || attr->shape().size() != 2 || attr->shape()[1] < 1) return {};
  Span<const float> all = attr->as<float>();
  const size_t width = static_cast<size_t>(attr->shape()[1]);
  std::vector<float> out(all.size() / width);
  for (size_t i = 0; i < out.size(); ++i) out[i] = all[i * width];
  return out;
}

TripleList read_split(const std::optional<MappedArray>& index, const std::optional<MappedArray>& types,
                      const std::optional<MappedArray>& attr, const std::optional<MappedArray>& time) {
  TripleList out;
  if (!index) return out;
  Span<const int64_t> ends = index->as<int64_t>();
  const size_t n = ends.size() / 2;
  out.head.assign(ends.begin(), ends.begin() + n);
  out.tail.assign(ends.begin() + n, ends.end());
  if (types) {
    Span<const int32_t> t = types->as<int32_t>();
    out.relation.assign(t.begin(), t.end());
  } else {
    out.relation.assign(n, 0);
  }
  out.value = first_column(attr);
  if (time) {
    Span<const int64_t> t = time->as<int64_t>();
    out.time.assign(t.begin(), t.end());
  }
  return out;
}

void index_triples(const TripleList& triples, std::unordered_map<uint64_t, std::vector<int64_t>>& tails_of,
                   std::unordered_map<uint64_t, std::vector<int64_t>>& heads_of, int32_t num_relations) {
  for (int64_t i = 0; i < triples.size(); ++i) {
    const uint64_t r = static_cast<uint64_t>(triples.relation[i]);
    tails_of[static_cast<uint64_t>(triples.head[i]) * num_relations + r].push_back(triples.tail[i]);
    heads_of[static_cast<uint64_t>(triples.tail[i]) * num_relations + r].push_back(triples.head[i]);
  }
}

void sort_unique(std::unordered_map<uint64_t, std::vector<int64_t>>& index) {
  for (auto& [key, ids] : index) {
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  }
}

Span<const int64_t> lookup(const std::unordered_map<uint64_t, std::vector<int64_t>>& index, uint64_t key) {
  auto it = index.find(key);
  return it == index.end() ? Span<const int64_t>() : Span<const int64_t>(it->second);
}

}  // namespace

KgTriples::KgTriples(const PartitionFolder& folder) {
  const PartitionMeta& meta = folder.meta();
  num_entities_ = meta.num_nodes;
  num_relations_ = meta.edge_types.empty() ? 1 : static_cast<int32_t>(meta.edge_types.size());
  if (meta.num_edges == 0) throw UsageError(folder.dir() + " has no edges to train a link predictor on");
  const size_t m = static_cast<size_t>(meta.num_edges);
  train_.head.assign(m, -1);
  train_.tail.assign(m, -1);
  train_.relation.assign(m, 0);
  if (meta.has_edge_time) train_time_.assign(m, 0);
  if (meta.edge_feature_dim > 0) train_.value.assign(m, 0.0f);
  valid_.resize(meta.num_parts);
  test_.resize(meta.num_parts);
  for (int p = 0; p < meta.num_parts; ++p) {
    const PartitionData d = folder.load_part(p);
    Span<const int64_t> indptr = d.indptr.as<int64_t>(), sources = d.indices.as<int64_t>(),
                        edge_ids = d.edge_ids.as<int64_t>();
    Span<const int32_t> types;
    if (d.edge_type) types = d.edge_type->as<int32_t>();
    Span<const int64_t> times;
    if (!train_time_.empty() && d.edge_time) times = d.edge_time->as<int64_t>();
    const std::vector<float> values = train_.value.empty() ? std::vector<float>() : first_column(d.edge_attr);
    for (int64_t c = 0; c < d.num_nodes(); ++c) {
      for (int64_t j = indptr[c]; j < indptr[c + 1]; ++j) {
        const int64_t e = edge_ids[j];
        if (e < 0 || static_cast<size_t>(e) >= m) {
          throw Error(folder.dir() + ": part " + std::to_string(p) + " holds edge id " + std::to_string(e) +
                      " outside the graph's " + std::to_string(m) + " edges");
        }
        train_.head[e] = sources[j];
        train_.tail[e] = d.node_begin + c;
        train_.relation[e] = types.empty() ? 0 : types[j];
        if (!times.empty()) train_time_[e] = times[j];
        if (!values.empty()) train_.value[e] = values[j];
      }
    }
    valid_[p] = read_split(d.val_edge_index, d.val_edge_type, d.val_edge_attr, d.val_edge_time);
    test_[p] = read_split(d.test_edge_index, d.test_edge_type, d.test_edge_attr, d.test_edge_time);
  }
  for (size_t e = 0; e < m; ++e) {
    if (train_.head[e] < 0) throw Error(folder.dir() + ": no part holds edge " + std::to_string(e));
  }
  const MappedArray node_map = folder.node_map();
  Span<const int64_t> map = node_map.as<int64_t>();
  to_global_.assign(map.begin(), map.end());

  if (meta.held_out_in_graph) {
    // The ends of every held-out triple, as an unordered pair: the graph's edges between
    // them are history, not training edges.
    std::set<std::pair<int64_t, int64_t>> held_out_pairs;
    for (const auto& split : {&valid_, &test_}) {
      for (const TripleList& part : *split) {
        for (int64_t i = 0; i < part.size(); ++i) {
          held_out_pairs.emplace(std::min(part.head[i], part.tail[i]), std::max(part.head[i], part.tail[i]));
        }
      }
    }
    history_.assign(m, 0);
    for (size_t e = 0; e < m; ++e) {
      history_[e] = held_out_pairs.count({std::min(train_.head[e], train_.tail[e]),
                                          std::max(train_.head[e], train_.tail[e])}) > 0;
      num_history_ += history_[e];
    }
    if (num_history_ == train_.size()) {
      throw UsageError(folder.dir() + " has no training edges: every edge is between the ends of a held-out edge");
    }
  }
  // Strict negatives consult the training edges alone.
  TripleList training;
  for (size_t e = 0; e < m && num_history_ > 0; ++e) {
    if (!is_training_edge(static_cast<int64_t>(e))) continue;
    training.head.push_back(train_.head[e]);
    training.tail.push_back(train_.tail[e]);
    training.relation.push_back(train_.relation[e]);
  }
  index_triples(train_, train_tails_of_, heads_of_, num_relations_);
  sort_unique(train_tails_of_);
  tails_of_ = train_tails_of_;
  if (num_history_ > 0) {
    std::unordered_map<uint64_t, std::vector<int64_t>> training_heads;
    train_tails_of_.clear();
    index_triples(training, train_tails_of_, training_heads, num_relations_);
    sort_unique(train_tails_of_);
  }
  for (const auto& split : {&valid_, &test_}) {
    for (const TripleList& part : *split) index_triples(part, tails_of_, heads_of_, num_relations_);
  }
  sort_unique(tails_of_);
  sort_unique(heads_of_);
}

TripleList KgTriples::held_out(const std::string& split, int part) const {
  if (split != "valid" && split != "test") throw Error("no held-out split '" + split + "' (valid or test)");
  const std::vector<TripleList>& parts = split == "valid" ? valid_ : test_;
  return parts.at(static_cast<size_t>(part));
}

bool KgTriples::is_train_triple(int64_t head, int32_t relation, int64_t tail) const {
  Span<const int64_t> tails = lookup(train_tails_of_, pair_key(head, relation));
  return std::binary_search(tails.begin(), tails.end(), tail);
}

Span<const int64_t> KgTriples::true_tails(int64_t head, int32_t relation) const {
  return lookup(tails_of_, pair_key(head, relation));
}

Span<const int64_t> KgTriples::true_heads(int32_t relation, int64_t tail) const {
  return lookup(heads_of_, pair_key(tail, relation));
}

std::vector<int64_t> KgTriples::epoch_order(uint64_t seed, uint64_t epoch) const {
  std::vector<int64_t> order(static_cast<size_t>(train_.size()));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  Rng rng(mix64(seed, 0x6b67'6f72'6465'72ull, epoch));  // "kgorder"
  shuffle(order, rng);
  return order;
}

std::vector<int64_t> KgTriples::draw_negatives(const KgNegatives& negatives, uint64_t seed, uint64_t epoch,
                                               uint64_t step, uint64_t chunk) const {
  if (negatives.k > num_entities_) {
    throw UsageError("negatives.k: " + std::to_string(negatives.k) + " is more than the graph's " +
                     std::to_string(num_entities_) + " entities");
  }
  Rng rng(mix64(mix64(seed, 0x6b676e6567ull /* "kgneg" */), mix64(epoch, step), chunk));
  std::vector<int64_t> out(static_cast<size_t>(negatives.k));
  const uint64_t num_degree = static_cast<uint64_t>(static_cast<double>(negatives.k) * negatives.degree_fraction);
  for (size_t j = 0; j < out.size(); ++j) {
    if (j < num_degree) {
      // An end of a uniformly drawn training triple: entities in proportion to degree.
      uint64_t e = rng.below(static_cast<uint64_t>(train_.size()));
      // Ends: at least one training edge exists (the constructor checks).
      while (!is_training_edge(static_cast<int64_t>(e))) e = rng.below(static_cast<uint64_t>(train_.size()));
      out[j] = (rng.next() & 1) ? train_.head[e] : train_.tail[e];
    } else {
      out[j] = to_global_[rng.below(static_cast<uint64_t>(num_entities_))];
    }
  }
  return out;
}

std::vector<int64_t> trainer_positions(const KgTriples& triples, const PartitionBook& book, Span<const int64_t> order,
                                       int64_t begin, int64_t end, int part, int share, int shares) {
  std::vector<int64_t> positions;
  const TripleList& train = triples.train();
  for (int64_t i = begin; i < end; ++i) {
    const int64_t e = order[i];
    if (book.owner(train.tail[e]) == part && e % shares == share) positions.push_back(i - begin);
  }
  return positions;
}

}  // namespace partita
