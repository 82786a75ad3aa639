#include "training/job_config.h"

#include <spdlog/spdlog.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>

#include "base/error.h"
#include "base/file_util.h"
#include "datasets/dataset_cache.h"
#include "datasets/registry.h"
#include "partitioner/feature_transforms.h"
#include "partitioner/partition_format.h"

namespace partita {

namespace fs = std::filesystem;

const char* name_of(Task task) {
  return task == Task::kLinkPrediction ? "link_prediction" : "node_classification";
}

const char* name_of(ModelKind kind) {
  switch (kind) {
    case ModelKind::kGraphSage: return "graphsage";
    case ModelKind::kGcn: return "gcn";
    case ModelKind::kGat: return "gat";
    case ModelKind::kRgcn: return "rgcn";
    case ModelKind::kHeteroSage: return "hetero_sage";
    case ModelKind::kMf: return "mf";
    case ModelKind::kRegistered: return "registered";
  }
  return "?";
}

const char* name_of(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::kAdam: return "adam";
    case Optimizer::kSgd: return "sgd";
    case Optimizer::kAdagrad: return "adagrad";
    case Optimizer::kSparseAdam: return "sparse_adam";
  }
  return "?";
}

const char* name_of(LinkDecoder decoder) {
  switch (decoder) {
    case LinkDecoder::kDot: return "dot";
    case LinkDecoder::kDistMult: return "distmult";
    case LinkDecoder::kComplEx: return "complex";
    case LinkDecoder::kTransE: return "transe";
  }
  return "?";
}

const char* name_of(LinkLoss loss) {
  switch (loss) {
    case LinkLoss::kSoftmax: return "softmax";
    case LinkLoss::kBce: return "bce";
    case LinkLoss::kMargin: return "margin";
    case LinkLoss::kMse: return "mse";
  }
  return "?";
}

const char* name_of(Regularizer regularizer) {
  switch (regularizer) {
    case Regularizer::kNone: return "none";
    case Regularizer::kL2: return "l2";
    case Regularizer::kN3: return "n3";
  }
  return "?";
}

namespace {

constexpr std::initializer_list<ModelKind> kAllKinds = {ModelKind::kGraphSage, ModelKind::kGcn, ModelKind::kGat,
                                                        ModelKind::kRgcn, ModelKind::kHeteroSage};
// What model.kind and model.encoder take: the built-ins, and a host's registered model.
constexpr std::initializer_list<ModelKind> kJobKinds = {ModelKind::kGraphSage, ModelKind::kGcn, ModelKind::kGat,
                                                        ModelKind::kRgcn, ModelKind::kHeteroSage,
                                                        ModelKind::kRegistered};

}  // namespace

std::string GnnSpec::description() const {
  return registered() ? "registered model '" + name + "'" : std::string(name_of(kind));
}

ModelKind model_kind_named(const std::string& name, const std::string& field) {
  std::string known;
  for (ModelKind kind : kAllKinds) {
    if (name == name_of(kind)) return kind;
    known += (known.empty() ? "" : ", ") + std::string(name_of(kind));
  }
  throw UsageError(field + ": '" + name + "' is not one of: " + known);
}

namespace {

// Reads one YAML mapping, remembering which keys were used so that a misspelt field is an
// error rather than a silently ignored default.
// True for the text of an integer (an optional sign, digits) that int64 cannot hold.
bool integer_out_of_range(const std::string& text) {
  const size_t digits = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
  if (digits >= text.size() || text.find_first_not_of("0123456789", digits) != std::string::npos) return false;
  errno = 0;
  (void)std::strtoll(text.c_str(), nullptr, 10);
  return errno == ERANGE;
}

class Section {
 public:
  Section(const YAML::Node& node, std::string path, std::string source)
      : node_(node), path_(std::move(path)), source_(std::move(source)) {
    if (node_ && !node_.IsNull() && !node_.IsMap()) fail(path_.empty() ? "the job" : path_, "expected a mapping");
  }

  [[noreturn]] void fail(const std::string& field, const std::string& why) const {
    throw UsageError(source_ + ": " + field + ": " + why);
  }

  const std::string& source() const { return source_; }
  std::string field(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  Section sub(const std::string& key) { return Section(get(key), field(key), source_); }
  bool has(const std::string& key) {
    used_.insert(key);
    return node_ && node_.IsMap() && node_[key] && !node_[key].IsNull();
  }
  YAML::Node get(const std::string& key) {
    used_.insert(key);
    return node_ && node_.IsMap() ? node_[key] : YAML::Node();
  }

  template <typename T>
  void read(const std::string& key, T& value, const char* type_name) {
    if (!has(key)) return;
    YAML::Node n = get(key);
    if (!n.IsScalar()) fail(field(key), std::string("expected ") + type_name);
    try {
      value = n.as<T>();
    } catch (const YAML::Exception&) {
      fail(field(key), std::string("expected ") + type_name + ", got '" + n.Scalar() + "'");
    }
  }
  // An integer in [min, max]; `max` bounds the counts that size a resource (JobLimits).
  void read_int(const std::string& key, int64_t& value, int64_t min, int64_t max = INT64_MAX) {
    // An integer past 64 bits is out of range, not "not an integer".
    if (has(key) && get(key).IsScalar() && integer_out_of_range(get(key).Scalar())) {
      const std::string& text = get(key).Scalar();
      fail(field(key), text[0] == '-' ? "must be at least " + std::to_string(min) + ", got " + text
                                      : "must be at most " + std::to_string(max) + ", got " + text);
    }
    read(key, value, "an integer");
    if (value < min) fail(field(key), "must be at least " + std::to_string(min) + ", got " + std::to_string(value));
    if (value > max) fail(field(key), "must be at most " + std::to_string(max) + ", got " + std::to_string(value));
  }
  void read_int(const std::string& key, int& value, int min, int max = 1 << 30) {
    int64_t wide = value;
    read_int(key, wide, min, max);
    value = static_cast<int>(wide);
  }
  void read_real(const std::string& key, double& value, double min, double max) {
    read(key, value, "a number");
    if (!(value >= min && value <= max)) {
      fail(field(key), "must be in [" + num(min) + ", " + num(max) + "], got " + num(value));
    }
  }
  void read_choice(const std::string& key, std::string& value, const std::vector<std::string>& choices) {
    read(key, value, "a string");
    for (const auto& c : choices) {
      if (value == c) return;
    }
    std::string list;
    for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
    fail(field(key), "'" + value + "' is not one of: " + list);
  }

  // A typed choice: the names of `choices` (name_of) are what the file may say.
  template <typename E>
  void read_enum(const std::string& key, E& value, std::initializer_list<E> choices) {
    std::string name = name_of(value);
    std::vector<std::string> names;
    for (E c : choices) names.emplace_back(name_of(c));
    read_choice(key, name, names);
    for (E c : choices) {
      if (name == name_of(c)) value = c;
    }
  }

  // After reading: any key nobody asked for is a mistake in the file.
  void reject_unknown() const {
    if (!node_ || !node_.IsMap()) return;
    std::set<std::string> seen;
    for (const auto& entry : node_) {
      // YAML allows a list or a mapping as a key ("? a: 1"); a job's keys are names.
      if (!entry.first.IsScalar()) fail(path_.empty() ? "the job" : path_, "a key must be a name, not a list or mapping");
      const std::string key = entry.first.Scalar();
      // YAML forbids repeated keys but yaml-cpp keeps the first silently.
      if (!seen.insert(key).second) fail(field(key), "given twice");
      if (used_.count(key) == 0) {
        std::string known;
        for (const auto& k : used_) known += (known.empty() ? "" : ", ") + k;
        fail(field(key), "unknown field (known here: " + known + ")");
      }
    }
  }

 private:
  static std::string num(double v) {
    std::ostringstream out;
    out << v;
    return out.str();
  }

  YAML::Node node_;
  std::string path_;
  std::string source_;
  std::set<std::string> used_;
};

std::string too_large(const std::string& name, uint64_t bytes) {
  return name + ": " + std::to_string(bytes) + " bytes; a job file is at most " +
         std::to_string(JobLimits::kMaxJobBytes) + " bytes (it names its data, it does not hold it)";
}

std::string absolute(const std::string& path, const std::string& base_dir) {
  fs::path p(path);
  if (p.is_relative()) p = fs::path(base_dir) / p;
  return p.lexically_normal().string();
}

// `dataset_name`: set to data.dataset when that is a name of the dataset registry.
void read_data(Section s, JobConfig& job, const std::string& base_dir, std::string& dataset_name) {
  std::string partitions, dataset;
  s.read("partitions", partitions, "a folder");
  s.read("dataset", dataset, "a path or a dataset's name (partita datasets list)");
  s.read_choice("format", job.format, {"linqs", "npy", "edgelist", "triples", "movielens", "movielens100k", "ntriples"});
  // A bare name of the registry is that dataset (`./cora` is a folder named cora).
  if (const datasets::NamedDataset* named = dataset.find('/') == std::string::npos ? datasets::find_dataset(dataset) : nullptr) {
    if (named->format.empty()) {
      s.fail(s.field("dataset"), dataset + " has no reader yet: `partita datasets download " + dataset +
                                     "` gives its files, to convert into a format a job reads (docs/datasets.md)");
    }
    if (s.has("format") && job.format != named->format) {
      s.fail(s.field("format"), job.format + ", but the dataset " + dataset + " is format " + named->format);
    }
    job.format = named->format;
    dataset_name = named->name;
  }
  if (s.has("generate")) {
    job.generate = true;
    Section g = s.sub("generate");
    GenerateSpec& spec = job.generate_spec;
    g.read_choice("kind", spec.kind, {"sbm", "rmat", "hetero"});
    g.read_int("nodes", spec.nodes, 4, JobLimits::kMaxGeneratedNodes);
    g.read_int("classes", spec.classes, 2, JobLimits::kMaxClasses);
    g.read_int("features", spec.features, 1, JobLimits::kMaxWidth);
    g.read_real("avg_degree", spec.avg_degree, 0.1, 1e4);
    g.read_int("train_nodes", spec.train_nodes, 0);
    g.read("seed", spec.seed, "an unsigned integer");
    if (spec.train_nodes > spec.nodes) g.fail(g.field("train_nodes"), "is more than the nodes");
    if (spec.nodes < 2 * spec.classes) g.fail(g.field("nodes"), "needs at least 2 nodes per class");
    g.reject_unknown();
  }
  if (s.has("transforms")) {
    YAML::Node list = s.get("transforms");
    if (!list.IsSequence()) s.fail(s.field("transforms"), "expected a list, e.g. [normalize_features]");
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string where = s.field("transforms") + "[" + std::to_string(i) + "]";
      if (!list[i].IsScalar()) s.fail(where, "expected a transform name");
      try {
        job.transforms.push_back(parse_feature_transform(list[i].Scalar(), where).text());
      } catch (const UsageError& e) {
        throw UsageError(s.source() + ": " + e.what());
      }
    }
  }
  if (s.has("split_seed") && s.has("split")) {
    s.fail(s.field("split_seed"), "give data.split only (split_seed: N is split: {kind: random, seed: N})");
  }
  if (s.has("split_seed")) {
    s.read("split_seed", job.data_split_seed, "an unsigned integer");
    job.random_split = true;
  }
  if (s.has("split")) {
    Section sp = s.sub("split");
    std::string kind = "standard";
    sp.read_choice("kind", kind, {"standard", "random"});
    job.random_split = kind == "random";
    if (job.random_split && !sp.has("seed")) sp.fail(sp.field("seed"), "missing: kind random draws with its own seed");
    if (!job.random_split && sp.has("seed")) {
      sp.fail(sp.field("seed"), "applies to kind random; kind standard is the same split for every job");
    }
    sp.read("seed", job.data_split_seed, "an unsigned integer");
    sp.reject_unknown();
  }
  s.read("remap_ids", job.remap_ids, "true or false");
  s.read("undirected", job.undirected, "true or false");
  for (const char* key : {"remap_ids", "undirected"}) {
    if (s.has(key) && (dataset.empty() || job.format != "edgelist")) {
      s.fail(s.field(key), "applies to a dataset of format: edgelist only");
    }
  }
  const bool parts_given = s.has("num_partitions");
  s.read_int("num_partitions", job.num_partitions, 1, JobLimits::kMaxPartitions);
  if (s.has("holdout")) {
    Section h = s.sub("holdout");
    h.read_real("val", job.holdout_val, 0, 0.5);
    h.read_real("test", job.holdout_test, 0, 0.5);
    std::string by = "random";
    h.read_choice("by", by, {"random", "time"});
    job.holdout_by_time = by == "time";
    std::string history = "drop";
    h.read_choice("history", history, {"drop", "keep"});
    job.holdout_keep_history = history == "keep";
    h.reject_unknown();
    if (!job.link_prediction()) {
      if (job.holdout_test > 0) h.fail(h.field("test"), "holds out edges, for task: link_prediction only");
      if (h.has("by") || h.has("history")) {
        h.fail(h.field(h.has("by") ? "by" : "history"), "holds out edges, for task: link_prediction only");
      }
      if (!partitions.empty()) {
        s.fail(s.field("holdout"), "validation nodes are cut when the job partitions a dataset; a partition folder "
                                   "has its node split already");
      }
    }
    if (!partitions.empty()) {
      s.fail(s.field("holdout"), "edges are held out when the job partitions a dataset; a partition folder has "
                                 "its held-out edges already");
    }
  }
  s.reject_unknown();

  const int sources = !partitions.empty() + !dataset.empty() + job.generate;
  if (sources == 0) s.fail("data", "give one of partitions, dataset or generate");
  if (sources > 1) s.fail("data", "give only one of partitions, dataset or generate");
  if (!partitions.empty()) {
    job.partitions = absolute(partitions, base_dir);
    // The error_code overloads: a path the system refuses (a name over 255 bytes, found by
    // fuzz_job_yaml) is an error naming it, not an uncaught filesystem_error.
    std::error_code error;
    if (!fs::exists(fs::path(job.partitions) / "META.json", error)) {
      s.fail(s.field("partitions"), job.partitions + " is not a partition folder (" +
                                        (error ? error.message() : std::string("no META.json")) + ")");
    }
    const int folder_parts = read_partition_meta(job.partitions).num_parts;
    if (parts_given && job.num_partitions != folder_parts) {
      s.fail(s.field("num_partitions"), std::to_string(job.num_partitions) + ", but " + job.partitions + " has " +
                                            std::to_string(folder_parts) + " parts");
    }
    job.num_partitions = folder_parts;
    if (!job.transforms.empty()) {
      s.fail(s.field("transforms"), "apply when the job prepares a dataset or generated graph; " + job.partitions +
                                        " is already partitioned (its META.json lists the transforms it was made with)");
    }
  }
  if (!dataset_name.empty()) {
    // Not downloaded here (load_job does): parsing stays free of side effects.
    try {
      job.dataset = datasets::named_dataset_dir(datasets::dataset_or_throw(dataset_name), "");
    } catch (const UsageError& e) {
      s.fail(s.field("dataset"), e.what());
    }
  } else if (!dataset.empty()) {
    job.dataset = absolute(dataset, base_dir);
    std::error_code error;
    if (!fs::exists(job.dataset, error)) {
      s.fail(s.field("dataset"), job.dataset + (error ? ": " + error.message() : std::string(" does not exist")));
    }
  }
}

// The GNN's shape, the same fields for a node classifier (model.kind) and a link
// predictor's encoder (model.encoder): model.kind is already read. `rgcn` is how the model
// section names R-GCN ("rgcn" or "encoder: rgcn").
void read_gnn_shape(Section& s, GnnSpec& model, const std::string& rgcn) {
  s.read("name", model.name, "a registered model's name");
  if (model.registered() && model.name.empty()) {
    s.fail(s.field("name"), "missing: a registered model is named by the name the host application registered it under");
  }
  if (!model.registered() && !model.name.empty()) {
    s.fail(s.field("name"), std::string("applies to a registered model only, not ") + name_of(model.kind));
  }
  s.read_int("hidden", model.hidden, 1, JobLimits::kMaxWidth);
  s.read_int("layers", model.layers, 1, JobLimits::kMaxLayers);
  s.read_int("heads", model.heads, 1, JobLimits::kMaxHeads);
  s.read_real("dropout", model.dropout, 0.0, 0.99);
  s.read_real("input_dropout", model.input_dropout, 0.0, 0.99);
  s.read("trim", model.trim, "true or false");
  s.read_choice("decomposition", model.decomposition, {"none", "basis", "block"});
  s.read_int("bases", model.bases, 0, JobLimits::kMaxWidth);
  s.read_int("blocks", model.blocks, 0, JobLimits::kMaxWidth);
  if (model.decomposition != "none" && model.kind != ModelKind::kRgcn) {
    s.fail(s.field("decomposition"), "applies to " + rgcn + " only, not " + name_of(model.kind));
  }
  if (model.registered() && model.input_dropout > 0) {
    s.fail(s.field("input_dropout"), "applies to the built-in kinds only: a registered model drops what it chooses");
  }
  if (model.decomposition == "basis" && model.bases == 0) s.fail(s.field("bases"), "basis decomposition needs bases > 0");
  if (model.decomposition == "block" && model.blocks == 0) s.fail(s.field("blocks"), "block decomposition needs blocks > 0");
  if (model.kind == ModelKind::kGat && model.hidden % model.heads != 0) {
    s.fail(s.field("hidden"), std::to_string(model.hidden) + " is not a multiple of model.heads (" +
                                  std::to_string(model.heads) + "): GAT splits the hidden features over its heads");
  }
}

// read_gnn_shape's fields, for job_to_yaml.
void write_gnn_shape(YAML::Emitter& out, const GnnSpec& model) {
  if (model.registered()) out << YAML::Key << "name" << YAML::Value << model.name;
  out << YAML::Key << "hidden" << YAML::Value << model.hidden;
  out << YAML::Key << "layers" << YAML::Value << model.layers;
  out << YAML::Key << "heads" << YAML::Value << model.heads;
  out << YAML::Key << "dropout" << YAML::Value << model.dropout;
  out << YAML::Key << "input_dropout" << YAML::Value << model.input_dropout;
  out << YAML::Key << "trim" << YAML::Value << model.trim;
  out << YAML::Key << "decomposition" << YAML::Value << model.decomposition;
  out << YAML::Key << "bases" << YAML::Value << model.bases;
  out << YAML::Key << "blocks" << YAML::Value << model.blocks;
}

void read_model(Section s, JobConfig& job) {
  GnnSpec& model = job.model;
  s.read_enum("kind", model.kind, kJobKinds);
  read_gnn_shape(s, model, "rgcn");
  s.read("target_type", model.target_type, "a node type name");
  s.reject_unknown();
  if (!model.relational() && !model.target_type.empty()) {
    s.fail(s.field("target_type"), std::string("applies to the relational kinds (rgcn, hetero_sage), not ") +
                                       name_of(model.kind));
  }
}

void read_sampling(Section s, JobConfig& job) {
  if (s.has("fanouts")) {
    YAML::Node node = s.get("fanouts");
    // A list of fanouts at `field`; 0 (no neighbours at that hop) only per edge type.
    const auto read_list = [&](const YAML::Node& list, const std::string& field, bool per_type) {
      if (!list.IsSequence() || list.size() == 0) s.fail(field, "expected a list of integers, e.g. [10, 10]");
      std::vector<int64_t> fanouts;
      for (size_t i = 0; i < list.size(); ++i) {
        const std::string item = field + "[" + std::to_string(i) + "]";
        int64_t f = 0;
        try {
          f = list[i].as<int64_t>();
        } catch (const YAML::Exception&) {
          s.fail(item, "expected an integer");
        }
        if (f < -1 || (f == 0 && !per_type)) {
          s.fail(item, per_type ? "must be positive, 0 (none) or -1 (all neighbours)"
                                : "must be positive or -1 (all neighbours)");
        }
        if (f > JobLimits::kMaxFanout) {
          s.fail(item, "must be at most " + std::to_string(JobLimits::kMaxFanout) + " (or -1: all neighbours), got " +
                           std::to_string(f));
        }
        fanouts.push_back(f);
      }
      return fanouts;
    };
    job.fanouts.clear();
    job.fanouts_by_type.clear();
    if (node.IsMap()) {
      if (node.size() == 0) s.fail(s.field("fanouts"), "expected a list per edge type, e.g. {writes: [10, 10]}");
      for (const auto& entry : node) {
        const std::string key = entry.first.as<std::string>();
        const std::string field = s.field("fanouts") + "." + key;
        if (key == "default") {
          job.fanouts = read_list(entry.second, field, false);
        } else {
          job.fanouts_by_type.emplace_back(key, read_list(entry.second, field, true));
        }
      }
    } else {
      job.fanouts = read_list(node, s.field("fanouts"), false);
    }
  }
  s.read_int("batch_size", job.batch_size, 1, JobLimits::kMaxBatchSize);
  s.read_int("prefetch", job.prefetch, 1, JobLimits::kMaxPrefetch);
  if (s.has("workers")) {
    s.fail(s.field("workers"), "no longer a setting: each trainer's sampler actor keeps `prefetch` batches in "
                               "flight instead of sampling threads; remove it");
  }
  s.read("replace", job.replace, "true or false");
  s.read_int("feature_cache_mb", job.feature_cache_mb, 0, JobLimits::kMaxFeatureCacheMb);
  s.read_choice("feature_cache_policy", job.feature_cache_policy, {"degree", "frequency", "sieve"});
  if (s.has("temporal")) {
    Section t = s.sub("temporal");
    if (!t.has("time")) t.fail(t.field("time"), "missing: node or edge (which times bound a seed's neighbourhood)");
    t.read_choice("time", job.temporal_time, {"node", "edge"});
    t.read_choice("strategy", job.temporal_strategy, {"uniform", "last"});
    std::string batches = "shuffled";
    t.read_choice("batches", batches, {"shuffled", "time"});
    job.time_ordered = batches == "time";
    t.reject_unknown();
  }
  s.reject_unknown();
}

void read_features(Section s, JobConfig& job) {
  s.read_choice("storage", job.feature_storage, {"auto", "memory", "mapped", "disk"});
  s.reject_unknown();
}

void read_link_model(Section s, JobConfig& job) {
  LinkPredictionSpec& link = job.link;
  std::string encoder = "none";
  s.read_choice("encoder", encoder, {"none", "graphsage", "gcn", "gat", "rgcn", "hetero_sage", "mf", "registered"});
  link.gnn_encoder = encoder != "none";
  if (job.link_gnn()) {
    // A GNN over sampled subgraphs, trained as node classifiers are; its own defaults.
    job.model.kind = encoder == "registered" ? ModelKind::kRegistered
                     : encoder == "mf"         ? ModelKind::kMf
                                               : model_kind_named(encoder, s.field("encoder"));
    link.decoder = LinkDecoder::kDot;
    link.loss = LinkLoss::kBce;
    link.negatives = 1;
    link.chunk_size = 1;
    link.eval_negatives = 1;
    job.optimizer = Optimizer::kAdam;
    job.learning_rate = 0.01;
    read_gnn_shape(s, job.model, "encoder: rgcn");
    if (job.model.matrix_factorisation()) link.init_std = 0.1;  // a row's factors start N(0, 0.1)
    if (s.has("target_edge")) {
      const YAML::Node list = s.get("target_edge");
      if (!list.IsSequence() || list.size() != 3) {
        s.fail(s.field("target_edge"), "expected [source type, relation, destination type], e.g. [user, rates, movie]");
      }
      for (size_t i = 0; i < 3; ++i) {
        if (!list[i].IsScalar() || list[i].Scalar().empty()) {
          s.fail(s.field("target_edge") + "[" + std::to_string(i) + "]", "expected a type name");
        }
        link.target_edge.push_back(list[i].Scalar());
      }
    }
    if (s.has("input") && s.get("input").IsMap()) {
      // Per node type: what its nodes read (ModelConfig::type_inputs).
      Section types = s.sub("input");
      link.input = "learnt";
      for (const auto& entry : s.get("input")) {
        if (!entry.first.IsScalar()) s.fail(s.field("input"), "a key must be a node type's name");
        const std::string type = entry.first.Scalar();
        std::string how;
        types.read_choice(type, how, {"learnt", "shared", "features", "features+learnt"});
        link.type_inputs[type] = how;
      }
      types.reject_unknown();  // a type given twice
      if (s.get("input").size() == 0) {
        s.fail(s.field("input"), "expected learnt, features or {type: learnt | shared | features | features+learnt, ...}");
      }
    } else {
      s.read_choice("input", link.input, {"features", "learnt"});
    }
    if (job.model.matrix_factorisation() && (link.learnt_input() || !link.type_inputs.empty())) {
      s.fail(s.field("input"), "mf reads its own learnt row per node and nothing else: leave model.input out");
    }
    if (link.learnt_input() && !job.model.relational()) {
      s.fail(s.field("input"), std::string("a learnt input row per node is for encoder: rgcn or hetero_sage, not ") +
                                   name_of(job.model.kind));
    }
    // The relations of DistMult, ComplEx and TransE are dense parameters of the encoder's
    // module (training/gnn_link_trainer.h), allreduced with its weights.
  }
  s.read_enum("decoder", link.decoder, {LinkDecoder::kDot, LinkDecoder::kDistMult, LinkDecoder::kComplEx,
                                        LinkDecoder::kTransE});
  s.read_int("transe_norm", link.transe_norm, 1);
  if (link.transe_norm > 2) s.fail(s.field("transe_norm"), "must be 1 or 2, got " + std::to_string(link.transe_norm));
  s.read_int("dim", link.dim, 1, JobLimits::kMaxWidth);
  s.read("reciprocal", link.reciprocal, "true or false");
  s.read("node_bias", link.node_bias, "true or false");
  if (link.node_bias && (!job.link_gnn() || job.model.matrix_factorisation())) {
    s.fail(s.field("node_bias"), job.link_gnn() ? "mf's rows carry a bias each already"
                                                : "a learnt bias per node is for GNN encoders; encoder: none learns rows");
  }
  s.read_real("init_std", link.init_std, 0, 10);
  s.reject_unknown();
  if (job.model.matrix_factorisation() && job.link_gnn() && link.decoder != LinkDecoder::kDot) {
    s.fail(s.field("decoder"), std::string("mf scores an edge as the dot product of its ends' factors plus their "
                                           "biases: decoder dot only, not ") + name_of(link.decoder));
  }
  if (link.decoder == LinkDecoder::kComplEx && link.dim % 2 != 0) {
    s.fail(s.field("dim"), "ComplEx needs an even dimension (real and imaginary halves), got " + std::to_string(link.dim));
  }
}

void read_negatives(Section s, JobConfig& job) {
  LinkPredictionSpec& link = job.link;
  s.read_int("k", link.negatives, 1, JobLimits::kMaxBatchSize);
  s.read_int("chunk_size", link.chunk_size, 1, JobLimits::kMaxBatchSize);
  s.read_real("degree_fraction", link.degree_fraction, 0, 1);
  s.read_choice("candidates", link.negative_candidates, {"all", "trained"});
  s.read("strict", link.strict, "true or false");
  s.reject_unknown();
}

void read_eval(Section s, JobConfig& job) {
  if (s.has("negatives")) {
    YAML::Node n = s.get("negatives");
    if (n.IsScalar() && n.Scalar() == "all") {
      if (!job.link.target_edge.empty()) {
        s.fail(s.field("negatives"), "'all' ranks against every node of the graph, and model.target_edge's "
                                     "destinations are of one type: give a count of sampled negatives");
      }
      job.link.eval_negatives = 0;
    } else {
      s.read_int("negatives", job.link.eval_negatives, 1, JobLimits::kMaxBatchSize);
    }
  }
  s.read_int("block", job.link.eval_block, 1, JobLimits::kMaxBatchSize);
  s.read_int("every", job.link.eval_every, 1);
  s.reject_unknown();
}

void read_train(Section s, JobConfig& job) {
  s.read_int("epochs", job.epochs, 1, JobLimits::kMaxEpochs);
  if (job.link_prediction() && !job.link_gnn()) {
    // Of the entity rows, applied by their owners (embeddings/row_optimizer.h); SparseAdam
    // starts from torch's default rate.
    s.read_enum("optimizer", job.optimizer, {Optimizer::kAdagrad, Optimizer::kSparseAdam});
    if (job.optimizer == Optimizer::kSparseAdam) job.learning_rate = 1e-3;
  } else {
    s.read_enum("optimizer", job.optimizer, {Optimizer::kAdam, Optimizer::kSgd});
  }
  if (job.link_prediction()) {
    s.read_enum("loss", job.link.loss, {LinkLoss::kSoftmax, LinkLoss::kBce, LinkLoss::kMargin, LinkLoss::kMse});
    if (job.link.regression() && !job.link_gnn()) {
      s.fail(s.field("loss"), "mse (rating regression) scores an edge from its ends' GNN encodings: it needs "
                              "model.encoder (graphsage, gcn, gat, rgcn or hetero_sage)");
    }
    s.read_real("margin", job.link.margin, 0, 1e6);
    if (job.link_gnn() && (job.model.matrix_factorisation() || job.link.node_bias)) {
      // Of mf's rows, or of the node biases.
      s.read_enum("regularizer", job.link.regularizer, {Regularizer::kNone, Regularizer::kL2});
    } else if (job.link_gnn()) {
      s.read_enum("regularizer", job.link.regularizer, {Regularizer::kNone});  // of embedding rows: none here
    } else {
      s.read_enum("regularizer", job.link.regularizer, {Regularizer::kNone, Regularizer::kL2, Regularizer::kN3});
    }
    s.read_real("regularization", job.link.regularization, 0, 1e6);
  }
  s.read_real("learning_rate", job.learning_rate, 1e-9, 100);
  s.read_real("weight_decay", job.weight_decay, 0, 1);
  s.read_real("momentum", job.momentum, 0, 1);
  s.read_int("trainers_per_partition", job.trainers_per_partition, 1, JobLimits::kMaxTrainersPerPartition);
  s.read_int("threads", job.threads, 1, JobLimits::kMaxThreads);
  s.read("seed", job.seed, "an unsigned integer");
  s.read_int("eval_batch_size", job.eval_batch_size, 1, JobLimits::kMaxBatchSize);
  s.read_int("max_restarts", job.max_restarts, 0, JobLimits::kMaxRestarts);
  s.read_int("checkpoint_every_steps", job.checkpoint_every_steps, int64_t{0}, JobLimits::kMaxCheckpointEverySteps);
  if (s.has("select")) {
    SelectMode mode = SelectMode::kBestVal;
    s.read_enum("select", mode, {SelectMode::kLast, SelectMode::kBestVal});
    job.select = mode;
  }
  if (s.has("early_stopping")) {
    Section e = s.sub("early_stopping");
    if (!e.has("patience")) e.fail(e.field("patience"), "missing: the evaluations without improvement to stop after");
    e.read_int("patience", job.early_stopping.patience, 1, JobLimits::kMaxEpochs);
    e.read_real("min_delta", job.early_stopping.min_delta, 0, 1e9);
    e.reject_unknown();
    if (job.select == SelectMode::kLast) {
      e.fail(s.field("early_stopping"), "stops on the validation metric; it needs select: best_val, not last");
    }
  }
  if (job.link_prediction() && !job.link_gnn() && job.checkpoint_every_steps > 0) {
    s.fail(s.field("checkpoint_every_steps"), "encoder: none jobs checkpoint at epoch ends only (for now)");
  }
  s.reject_unknown();
}

void read_embeddings(Section s, JobConfig& job, const std::string& base_dir) {
  LinkPredictionSpec& link = job.link;
  s.read_choice("storage", link.embedding_storage, {"memory", "disk"});
  if (!link.on_disk()) {
    for (const char* key : {"partitions", "buffer", "dir", "prefetch"}) {
      if (s.has(key)) s.fail(s.field(key), "applies to storage: disk only");
    }
  }
  s.read_int("partitions", link.embedding_partitions, 1, JobLimits::kMaxPartitions);
  s.read_int("buffer", link.embedding_buffer, 2, JobLimits::kMaxPartitions);
  if (link.on_disk() && link.embedding_buffer > link.embedding_partitions) {
    s.fail(s.field("buffer"), std::to_string(link.embedding_buffer) + (s.has("buffer") ? "" : " (the default)") +
                                  " is more than the " + std::to_string(link.embedding_partitions) + " partitions");
  }
  std::string dir;
  s.read("dir", dir, "a folder");
  if (!dir.empty()) link.embedding_dir = absolute(dir, base_dir);
  s.read("prefetch", link.embedding_prefetch, "true or false");
  s.reject_unknown();
}

void read_cluster(Section s, JobConfig& job) {
  s.read_int("partitions_per_node", job.partitions_per_node, 1, JobLimits::kMaxPartitions);
  s.reject_unknown();
}

}  // namespace

std::string JobConfig::partition_dir() const {
  return partitions.empty() ? (fs::path(output) / "partitions").string() : partitions;
}

// parse_job, also naming the registry's dataset data.dataset names (else "").
static JobConfig parse_job_naming(const std::string& yaml, const std::string& base_dir, const std::string& name,
                                  std::string& dataset_name) {
  if (yaml.size() > JobLimits::kMaxJobBytes) throw UsageError(too_large(name, yaml.size()));
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::DeepRecursion& e) {
    throw UsageError(name + ": line " + std::to_string(e.mark.line + 1) + ": nested too deeply (" +
                     std::to_string(e.depth()) + " levels; a job's sections are a few)");
  } catch (const YAML::ParserException& e) {
    throw UsageError(name + ": line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (!root || root.IsNull()) throw UsageError(name + ": the job is empty");
  JobConfig job;
  Section top(root, "", name);
  top.read_enum("task", job.task, {Task::kNodeClassification, Task::kLinkPrediction});
  if (job.link_prediction()) {
    job.optimizer = Optimizer::kAdagrad;
    job.learning_rate = 0.1;
  }
  if (!top.has("data")) top.fail("data", "missing: say which graph to train on");
  read_data(top.sub("data"), job, base_dir, dataset_name);
  if (job.link_prediction()) {
    read_link_model(top.sub("model"), job);
    read_negatives(top.sub("negatives"), job);
    read_eval(top.sub("eval"), job);
    if (top.has("embeddings")) {
      if (job.link_gnn()) top.fail("embeddings", "holds learnable entity embeddings, which a GNN encoder has none of");
      read_embeddings(top.sub("embeddings"), job, base_dir);
    }
  } else {
    read_model(top.sub("model"), job);
  }
  read_sampling(top.sub("sampling"), job);
  read_features(top.sub("features"), job);
  read_train(top.sub("train"), job);
  read_cluster(top.sub("cluster"), job);
  std::string output = job.output;
  top.read("output", output, "a folder");
  job.output = absolute(output, base_dir);
  top.reject_unknown();

  if (job.temporal() && job.link_prediction() && !job.link_gnn()) {
    top.fail("sampling.temporal", "bounds the sampled neighbourhoods of a GNN encoder; encoder: none samples none");
  }
  if (job.link.on_disk() && job.optimizer == Optimizer::kSparseAdam) {
    top.fail("train.optimizer", "sparse_adam keeps two moments per entity row (3x the table, against Adagrad's 2x) and "
                                "is not supported with embeddings.storage: disk, whose partition files hold one "
                                "Adagrad accumulator per row; use adagrad");
  }
  if (job.link.on_disk() && (job.num_partitions != 1 || job.trainers_per_partition != 1)) {
    top.fail("embeddings.storage", "disk trains one table behind one buffer: it needs data.num_partitions: 1 and "
                                   "train.trainers_per_partition: 1 (the job has " +
                                       std::to_string(job.num_partitions) + " and " +
                                       std::to_string(job.trainers_per_partition) + ")");
  }
  if (job.link.regression() && job.link.eval_negatives == 0) {
    top.fail("eval.negatives", "'all' ranks each held-out edge against every entity, and train.loss: mse predicts "
                               "edge values, with nothing to rank: leave eval.negatives out");
  }
  if (job.holdout_keep_history && job.link.eval_negatives == 0) {
    top.fail("eval.negatives", "'all' ranks against one encoding of every entity, made once per evaluation with "
                               "every edge in reach, and data.holdout.history: keep leaves the held-out links in the "
                               "graph: they would be in the encodings that rank them; give a number of negatives");
  }
  if (job.holdout_by_time && !job.temporal()) {
    top.fail("data.holdout.by", "time holds out the latest links, for jobs with sampling.temporal");
  }
  if (job.holdout_keep_history && (!job.holdout_by_time || job.temporal_time != "edge")) {
    top.fail("data.holdout.history", "keep keeps the held-out links in the graph as history, for a time split "
                                     "(data.holdout.by: time) with sampling.temporal: {time: edge}, which bounds "
                                     "every seed strictly before its link's time");
  }
  if (job.link_gnn() && job.model.matrix_factorisation() && job.link.eval_negatives == 0) {
    top.fail("eval.negatives", "'all' ranks against an encoding table of model.dim columns, and mf's rows carry a "
                               "bias beside their factors: give a number of sampled negatives");
  }
  if (!job.link_prediction() || (job.link_gnn() && !job.model.matrix_factorisation())) {
    const auto check_hops = [&](const std::string& field, size_t hops) {
      if (static_cast<int>(hops) != job.model.layers) {
        top.fail(field, "has " + std::to_string(hops) + " entries but model.layers is " + std::to_string(job.model.layers) +
                            ": one fanout per layer");
      }
    };
    if (job.fanouts_by_type.empty() || !job.fanouts.empty()) {
      check_hops(job.fanouts_by_type.empty() ? "sampling.fanouts" : "sampling.fanouts.default", job.fanouts.size());
    }
    for (const auto& [type, fanouts] : job.fanouts_by_type) check_hops("sampling.fanouts." + type, fanouts.size());
  }
  return job;
}

JobConfig parse_job(const std::string& yaml, const std::string& base_dir, const std::string& name) {
  std::string dataset_name;
  return parse_job_naming(yaml, base_dir, name, dataset_name);
}

JobConfig load_job(const std::string& path) {
  std::error_code error;
  const auto status = fs::status(path, error);
  if (error || !fs::exists(status)) throw UsageError("cannot read job file " + path + ": no such file");
  if (!fs::is_regular_file(status)) throw UsageError("cannot read job file " + path + ": not a regular file");
  // Before reading a byte: a 50 MB file with a 25M-item list took 68 s and 9.3 GB to parse.
  const auto bytes = fs::file_size(path, error);
  if (!error && bytes > JobLimits::kMaxJobBytes) throw UsageError(too_large(path, bytes));
  std::ifstream in(path);
  if (!in) throw UsageError("cannot read job file " + path + ": " + errno_text());
  std::stringstream text;
  text << in.rdbuf();
  const fs::path base = fs::absolute(fs::path(path)).parent_path();
  std::string dataset_name;
  JobConfig job = parse_job_naming(text.str(), base.string(), path, dataset_name);
  if (!dataset_name.empty()) {
    const datasets::NamedDataset& named = datasets::dataset_or_throw(dataset_name);
    if (datasets::local_copy(named).empty() && !datasets::is_cached(named, "")) {
      spdlog::info("{}: data.dataset {} is not downloaded yet; downloading it into {} (licence: {}; cite: {})", path,
                   named.name, job.dataset, named.licence, named.citation);
      try {
        job.dataset = datasets::fetch_dataset(named);
      } catch (const Error& e) {
        throw Error(path + ": data.dataset " + named.name + ": " + e.what());
      }
    }
  }
  return job;
}

std::string job_to_yaml(const JobConfig& job) {
  YAML::Emitter out;
  out.SetDoublePrecision(17);  // the trainers must read back the very same numbers
  out << YAML::BeginMap;
  out << YAML::Key << "task" << YAML::Value << name_of(job.task);
  out << YAML::Key << "data" << YAML::Value << YAML::BeginMap;
  // Whatever the source was, the job now trains on this folder.
  out << YAML::Key << "partitions" << YAML::Value << job.partition_dir();
  out << YAML::Key << "num_partitions" << YAML::Value << job.num_partitions;
  out << YAML::EndMap;
  const LinkPredictionSpec& link = job.link;
  out << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
  if (job.link_prediction()) {
    out << YAML::Key << "encoder" << YAML::Value << (link.gnn_encoder ? name_of(job.model.kind) : "none");
    out << YAML::Key << "decoder" << YAML::Value << name_of(link.decoder);
    out << YAML::Key << "transe_norm" << YAML::Value << link.transe_norm;
    out << YAML::Key << "dim" << YAML::Value << link.dim;
    out << YAML::Key << "reciprocal" << YAML::Value << link.reciprocal;
    if (link.node_bias) out << YAML::Key << "node_bias" << YAML::Value << true;
    out << YAML::Key << "init_std" << YAML::Value << link.init_std;
  }
  if (job.link_gnn()) {
    write_gnn_shape(out, job.model);
    if (link.type_inputs.empty()) {
      out << YAML::Key << "input" << YAML::Value << link.input;
    } else {
      out << YAML::Key << "input" << YAML::Value << YAML::Flow << YAML::BeginMap;
      for (const auto& [type, how] : link.type_inputs) out << YAML::Key << type << YAML::Value << how;
      out << YAML::EndMap;
    }
    if (!link.target_edge.empty()) out << YAML::Key << "target_edge" << YAML::Value << YAML::Flow << link.target_edge;
  } else if (!job.link_prediction()) {
    out << YAML::Key << "kind" << YAML::Value << name_of(job.model.kind);
    write_gnn_shape(out, job.model);
    out << YAML::Key << "target_type" << YAML::Value << job.model.target_type;
  }
  out << YAML::EndMap;
  if (job.link_prediction()) {
    out << YAML::Key << "negatives" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "k" << YAML::Value << link.negatives;
    out << YAML::Key << "chunk_size" << YAML::Value << link.chunk_size;
    out << YAML::Key << "degree_fraction" << YAML::Value << link.degree_fraction;
    out << YAML::Key << "candidates" << YAML::Value << link.negative_candidates;
    out << YAML::Key << "strict" << YAML::Value << link.strict;
    out << YAML::EndMap;
    out << YAML::Key << "eval" << YAML::Value << YAML::BeginMap;
    if (link.eval_negatives == 0) {
      out << YAML::Key << "negatives" << YAML::Value << "all";
    } else {
      out << YAML::Key << "negatives" << YAML::Value << link.eval_negatives;
    }
    out << YAML::Key << "block" << YAML::Value << link.eval_block;
    out << YAML::Key << "every" << YAML::Value << link.eval_every;
    out << YAML::EndMap;
    if (!job.link_gnn()) {
      out << YAML::Key << "embeddings" << YAML::Value << YAML::BeginMap;
      out << YAML::Key << "storage" << YAML::Value << link.embedding_storage;
      if (link.on_disk()) {
        out << YAML::Key << "partitions" << YAML::Value << link.embedding_partitions;
        out << YAML::Key << "buffer" << YAML::Value << link.embedding_buffer;
        if (!link.embedding_dir.empty()) out << YAML::Key << "dir" << YAML::Value << link.embedding_dir;
        out << YAML::Key << "prefetch" << YAML::Value << link.embedding_prefetch;
      }
      out << YAML::EndMap;
    }
  }
  out << YAML::Key << "sampling" << YAML::Value << YAML::BeginMap;
  if (job.fanouts_by_type.empty()) {
    out << YAML::Key << "fanouts" << YAML::Value << YAML::Flow << job.fanouts;
  } else {
    out << YAML::Key << "fanouts" << YAML::Value << YAML::BeginMap;
    for (const auto& [type, fanouts] : job.fanouts_by_type) out << YAML::Key << type << YAML::Value << YAML::Flow << fanouts;
    if (!job.fanouts.empty()) out << YAML::Key << "default" << YAML::Value << YAML::Flow << job.fanouts;
    out << YAML::EndMap;
  }
  out << YAML::Key << "batch_size" << YAML::Value << job.batch_size;
  out << YAML::Key << "prefetch" << YAML::Value << job.prefetch;
  out << YAML::Key << "replace" << YAML::Value << job.replace;
  out << YAML::Key << "feature_cache_mb" << YAML::Value << job.feature_cache_mb;
  out << YAML::Key << "feature_cache_policy" << YAML::Value << job.feature_cache_policy;
  if (job.temporal()) {
    out << YAML::Key << "temporal" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "time" << YAML::Value << job.temporal_time;
    out << YAML::Key << "strategy" << YAML::Value << job.temporal_strategy;
    out << YAML::Key << "batches" << YAML::Value << (job.time_ordered ? "time" : "shuffled");
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  out << YAML::Key << "features" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "storage" << YAML::Value << job.feature_storage;
  out << YAML::EndMap;
  out << YAML::Key << "train" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "epochs" << YAML::Value << job.epochs;
  out << YAML::Key << "optimizer" << YAML::Value << name_of(job.optimizer);
  if (job.link_prediction()) {
    out << YAML::Key << "loss" << YAML::Value << name_of(link.loss);
    out << YAML::Key << "margin" << YAML::Value << link.margin;
    out << YAML::Key << "regularizer" << YAML::Value << name_of(link.regularizer);
    out << YAML::Key << "regularization" << YAML::Value << link.regularization;
  }
  out << YAML::Key << "learning_rate" << YAML::Value << job.learning_rate;
  out << YAML::Key << "weight_decay" << YAML::Value << job.weight_decay;
  out << YAML::Key << "momentum" << YAML::Value << job.momentum;
  out << YAML::Key << "trainers_per_partition" << YAML::Value << job.trainers_per_partition;
  out << YAML::Key << "threads" << YAML::Value << job.threads;
  out << YAML::Key << "seed" << YAML::Value << job.seed;
  out << YAML::Key << "eval_batch_size" << YAML::Value << job.eval_batch_size;
  out << YAML::Key << "max_restarts" << YAML::Value << job.max_restarts;
  out << YAML::Key << "checkpoint_every_steps" << YAML::Value << job.checkpoint_every_steps;
  if (job.select) out << YAML::Key << "select" << YAML::Value << name_of(*job.select);
  if (job.early_stopping.enabled()) {
    out << YAML::Key << "early_stopping" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "patience" << YAML::Value << job.early_stopping.patience;
    out << YAML::Key << "min_delta" << YAML::Value << job.early_stopping.min_delta;
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  out << YAML::Key << "cluster" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "partitions_per_node" << YAML::Value << job.partitions_per_node;
  out << YAML::EndMap;
  out << YAML::Key << "output" << YAML::Value << job.output;
  out << YAML::EndMap;
  return out.c_str();
}

namespace {

// The jobs this process decoded, by their text, the most recent last (job_from_setting).
struct DecodedJobs {
  static constexpr size_t kKept = 16;  // jobs whose actors start at once on one process
  std::mutex mutex;
  std::deque<std::pair<std::string, std::shared_ptr<const JobConfig>>> jobs;

  // Under `mutex`.
  std::shared_ptr<const JobConfig> find(const std::string& text) const {
    for (const auto& [t, job] : jobs) {
      if (t == text) return job;
    }
    return nullptr;
  }
};

DecodedJobs& decoded_jobs() {
  static DecodedJobs decoded;
  return decoded;
}

}  // namespace

std::shared_ptr<const JobConfig> job_from_setting(const std::string& text, const std::string& name) {
  DecodedJobs& decoded = decoded_jobs();
  {
    std::lock_guard<std::mutex> lock(decoded.mutex);
    if (auto job = decoded.find(text)) return job;
  }
  // Parsed outside the lock (it reads the partition folder's META.json); two actors that
  // race here parse twice and keep the first.
  auto parsed = std::make_shared<const JobConfig>(parse_job(text, "/", name));
  std::lock_guard<std::mutex> lock(decoded.mutex);
  if (auto job = decoded.find(text)) return job;
  decoded.jobs.emplace_back(text, parsed);
  if (decoded.jobs.size() > DecodedJobs::kKept) decoded.jobs.pop_front();
  return parsed;
}

std::string fanout_setting(const JobConfig& job, const std::vector<EdgeType>& edge_types) {
  const auto list_text = [](const std::vector<int64_t>& fanouts) {
    std::string text;
    for (int64_t f : fanouts) text += (text.empty() ? "" : ",") + std::to_string(f);
    return text;
  };
  const auto full_name = [](const EdgeType& t) { return t.src_type + "," + t.relation + "," + t.dst_type; };
  const std::string where = "sampling.fanouts of " + job.partition_dir();
  if (job.link_gnn() && job.model.matrix_factorisation()) {
    // One hop with no neighbour of any type: the batch is the seeds alone. A graph of one
    // edge type has no row list to say 0 with.
    if (edge_types.size() < 2) {
      throw UsageError("model.encoder: mf samples no neighbours, which needs a graph with edge types (a user-item "
                       "graph, MovieLens' rates and rated_by); " + job.partition_dir() + " has " +
                       std::to_string(edge_types.size()));
    }
    std::string text;
    for (size_t t = 0; t < edge_types.size(); ++t) text += t == 0 ? "0" : ";0";
    return text;
  }
  if (job.fanouts_by_type.empty()) return list_text(job.fanouts);
  if (edge_types.empty()) {
    throw UsageError(where + ": fanouts per edge type need a heterogeneous graph; this one has no edge types");
  }
  std::vector<const std::vector<int64_t>*> rows(edge_types.size(), nullptr);
  for (const auto& [key, fanouts] : job.fanouts_by_type) {
    std::vector<size_t> matches;
    for (size_t t = 0; t < edge_types.size(); ++t) {
      if (key == full_name(edge_types[t])) matches = {t};
    }
    if (matches.empty()) {
      for (size_t t = 0; t < edge_types.size(); ++t) {
        if (key == edge_types[t].relation) matches.push_back(t);
      }
    }
    if (matches.empty()) {
      std::string known;
      for (size_t t = 0; t < edge_types.size() && t < 10; ++t) known += (t ? "; " : "") + full_name(edge_types[t]);
      if (edge_types.size() > 10) known += "; ... (" + std::to_string(edge_types.size()) + " in all)";
      throw UsageError(where + ": '" + key + "' is not an edge type of the graph (" + known + ")");
    }
    if (matches.size() > 1) {
      throw UsageError(where + ": relation '" + key + "' names " + std::to_string(matches.size()) + " edge types (" +
                       full_name(edge_types[matches[0]]) + ", " + full_name(edge_types[matches[1]]) +
                       ", ...): write it as src_type,relation,dst_type");
    }
    if (rows[matches[0]] != nullptr) {
      throw UsageError(where + ": edge type " + full_name(edge_types[matches[0]]) + " is given twice");
    }
    rows[matches[0]] = &fanouts;
  }
  std::string text;
  for (size_t t = 0; t < edge_types.size(); ++t) {
    if (rows[t] == nullptr && job.fanouts.empty()) {
      throw UsageError(where + ": edge type " + full_name(edge_types[t]) +
                       " has no fanouts (name it, or give a `default` list)");
    }
    text += (t ? ";" : "") + list_text(rows[t] != nullptr ? *rows[t] : job.fanouts);
  }
  return text;
}

}  // namespace partita
