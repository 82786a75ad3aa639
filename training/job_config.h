// A training job as its YAML file describes it. Every field has a default (below, and in
// examples/README.md); load_job() validates the file field by field and names the field in
// every error. Relative paths are resolved against the job file's folder, so a job file
// means the same thing from any working directory.
//
// Parsed once, the job is typed: the task, the model kind, the optimiser and link
// prediction's decoder, loss and regularizer are enums (name_of() gives back their names),
// a GNN's fields are one section (GnnSpec) and link prediction's another
// (LinkPredictionSpec). The actors that run a job get it through job_from_setting (below).
//
//   data:
//     partitions: DIR          # a folder written by `partita partition`, or else:
//     dataset: PATH            # a dataset, partitioned when the job starts into
//     format: npy              #   OUTPUT/partitions (linqs, npy, edgelist, triples, movielens,
//                              #   movielens100k, ntriples); or a named dataset (dataset: cora,
//                              #   datasets/registry.h) with its format, downloaded if missing
//     remap_ids: false         # edgelist: sparse or named ids numbered 0..N-1 by first appearance
//     undirected: false        # edgelist: every pair in both directions, once
//     generate: {kind: sbm, nodes: 100000, classes: 8, features: 32, avg_degree: 10,
//                train_nodes: 0, seed: 1}   # kind: sbm, rmat or hetero; train_nodes 0 = 10%
//     num_partitions: 2        # for dataset/generate
//     transforms: [normalize_features]   # for dataset/generate; also standardize, multi_hot:COLS
//     split: {kind: standard}  # for dataset/generate: the splits it draws (LINQS' node split,
//                              #   data.holdout's cuts) and the partitioning; or {kind: random, seed: 7}
//     holdout: {val: 0.2}      # node classification: the share of the training nodes moved to
//                              #   validation (0: none; AIFB trains on its whole training set)
//   model: {kind: graphsage, hidden: 128, layers: 2, heads: 4, dropout: 0.5, trim: true,
//           decomposition: none, bases: 0, blocks: 0, target_type: ""}   # the last four: rgcn, hetero_sage
//   model: {kind: registered, name: my_sage, hidden: 128, layers: 2, dropout: 0.5}  # a host's own
//           module (models/model_registry.h), built by the factory registered under `name`
//   sampling: {fanouts: [10, 10], batch_size: 512, prefetch: 2, replace: false,   # or per edge
//              # type: fanouts: {writes: [5, 5], "paper,cites,paper": [10, 0], default: [3, 3]}
//              feature_cache_mb: 0, feature_cache_policy: degree,   # cache 0 = off
//              temporal: {time: node, strategy: uniform, batches: shuffled}}  # optional
//   features: {storage: auto}   # auto, memory, mapped or disk (partitioner/partition_stores.h)
//   train:
//     epochs: 5
//     optimizer: adam           # adam or sgd
//     learning_rate: 0.01
//     weight_decay: 0.0
//     momentum: 0.9             # sgd only
//     trainers_per_partition: 1
//     threads: 1                # threads per trainer for its dense products
//     seed: 1
//     eval_batch_size: 1024
//     max_restarts: 3           # recoveries from a lost node (jobs submitted to a head)
//     checkpoint_every_steps: 0 # also checkpoint every N steps; 0: at epoch ends only
//     select: best_val          # the epoch reported and kept (OUTPUT/selected/): best_val, the best
//                               #   validation metric (default when the job has validation), or last
//     early_stopping: {patience: 0, min_delta: 0.0}   # stop after `patience` evaluations without
//                               #   improving by more than min_delta; patience 0: off
//   cluster:
//     partitions_per_node: 1    # at most this many partitions (with their trainers) per node
//   output: runs/job            # checkpoints, metrics.jsonl, the partitions of a dataset
//
// Link prediction (task: link_prediction) reads its own model, negatives, train and eval
// fields instead (LinkPredictionSpec; examples/fb15k237.yaml):
//   task: link_prediction
//   model: {encoder: none, decoder: distmult, dim: 128, reciprocal: false, transe_norm: 1,
//           init_std: 0.001}
//   negatives: {k: 256, chunk_size: 256, degree_fraction: 0.0, strict: false}
//   sampling: {batch_size: 512}  # positive triples per step, over all trainers
//   train: {loss: softmax, margin: 1.0, regularizer: none, regularization: 0.0,
//           optimizer: adagrad, learning_rate: 0.1, ...}  # loss: softmax, bce, margin or mse
//                                 # (mse: regression on the edge's one feature, GNN encoders);
//                                 # optimizer of the entity rows: adagrad or sparse_adam
//   eval: {negatives: all, block: 4096, every: 1}
// With a GNN encoder (examples/cora_link.yaml) the model also takes node classification's
// hidden, layers, heads, dropout and trim, sampling its fanouts, and the defaults differ.
// The relational encoders (rgcn with decomposition, bases, blocks; hetero_sage) run on
// heterogeneous graphs, with target_edge for one edge type (examples/movielens_link.yaml):
//   data: {..., holdout: {val: 0.05, test: 0.1}}   # edges held out when partitioning
//   model: {encoder: graphsage, decoder: dot, dim: 128, hidden: 128, layers: 2, ...}
//   negatives: {k: 1, chunk_size: 1}   train: {loss: bce, optimizer: adam, learning_rate: 0.01}
//   eval: {negatives: 1}                # sampled negatives per held-out edge: AUC, MRR, Hits@k
// Biased matrix factorisation (examples/movielens_rating_mf.yaml), the rating baseline of
// the same pipeline: an edge's score is <p_u, q_i> + b_u + b_i from a learnt row and bias per
// node (plus the training mean with train.loss: mse), L2 on the rows each positive reads:
//   model: {encoder: mf, target_edge: [user, rates, movie], dim: 64, init_std: 0.1}
//   train: {loss: mse, regularizer: l2, regularization: 0.05, optimizer: adam, ...}
// A GNN encoder takes the same biases with model.node_bias: true (and l2 on them alone).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/epoch_plan.h"
#include "partitioner/dataset.h"
#include "training/model_selection.h"

namespace partita {

// A synthetic graph made by the project's generators (partitioner/generators.h): "sbm",
// whose labels are learnable, "rmat", a power-law graph with random labels for measuring
// speed, or "hetero", the academic graph (papers, authors, venues) whose paper fields a
// relational model learns: `nodes` papers, nodes / 2 authors, nodes / 400 venues (at least
// `classes` each), `avg_degree` citations per paper, `features` on papers only.
struct GenerateSpec {
  std::string kind = "sbm";
  int64_t nodes = 100000;
  int64_t classes = 8;
  int64_t features = 32;
  double avg_degree = 10;
  int64_t train_nodes = 0;  // 0: 10% of the nodes
  uint64_t seed = 1;
};

// The largest value of each count that sizes a resource (threads, actors, buffers, tensors).
// A job above one is refused, naming the field and the limit: `train.threads: 100000`
// once started 3,322 threads before failing. The limits are far above any sensible job.
struct JobLimits {
  static constexpr uint64_t kMaxJobBytes = 256 * 1024;  // read before parsing the YAML
  static constexpr int kMaxPartitions = 1024;
  static constexpr int kMaxTrainersPerPartition = 64;
  static constexpr int kMaxThreads = 1024;  // per trainer
  static constexpr int kMaxPrefetch = 64;   // batches in flight per sampler
  static constexpr int kMaxLayers = 16;
  static constexpr int kMaxHeads = 64;
  static constexpr int kMaxEpochs = 1 << 20;
  static constexpr int64_t kMaxWidth = 1 << 16;  // features, hidden units
  static constexpr int64_t kMaxClasses = 1 << 20;
  static constexpr int64_t kMaxBatchSize = 1 << 24;
  static constexpr int64_t kMaxFanout = 1 << 20;
  static constexpr int64_t kMaxGeneratedNodes = int64_t{1} << 32;
  static constexpr int64_t kMaxFeatureCacheMb = int64_t{1} << 20;  // 1 TiB: a node's memory, at most
  static constexpr int kMaxRestarts = 1000;
  static constexpr int64_t kMaxCheckpointEverySteps = int64_t{1} << 40;
};

// The closed choices of a job file, typed: parse_job maps each YAML name to its value once
// and rejects any other name (naming the field and the names it takes); name_of() gives the
// name back (job_to_yaml, messages, and the string-keyed layers below: models/ and
// checkpoints name a model kind and an optimiser by these names).
enum class Task { kNodeClassification, kLinkPrediction };  // task:
// model.kind (node classification) or model.encoder (link prediction with a GNN encoder).
// kRegistered: a host application's module, named by model.name (models/model_registry.h).
// The file says `kind: registered, name: NAME` rather than `kind: NAME` so that a job file
// parses and validates the same in every process, also in one that has no such model (the
// `partita` CLI, a head, a daemon that lacks it: the trainer that builds the model names the
// problem there), a misspelt built-in kind is still refused by the parser, and a host's name
// never shadows a built-in kind, present or future.
// kMf: biased matrix factorisation, a link encoder only (model.encoder: mf): a learnt row of
// link.dim factors and a bias per node, no features, no neighbours (models/model_config.h).
enum class ModelKind { kGraphSage, kGcn, kGat, kRgcn, kHeteroSage, kMf, kRegistered };
// train.optimizer: adam or sgd for the dense weights of a GNN (models/optimizer.h); adagrad
// or sparse_adam for the entity rows of encoder: none (embeddings/row_optimizer.h).
enum class Optimizer { kAdam, kSgd, kAdagrad, kSparseAdam };
enum class LinkDecoder { kDot, kDistMult, kComplEx, kTransE };  // model.decoder
enum class LinkLoss { kSoftmax, kBce, kMargin, kMse };         // train.loss
enum class Regularizer { kNone, kL2, kN3 };                    // train.regularizer

const char* name_of(Task task);
const char* name_of(ModelKind kind);
const char* name_of(Optimizer optimizer);
const char* name_of(LinkDecoder decoder);
const char* name_of(LinkLoss loss);
const char* name_of(Regularizer regularizer);
// The built-in kind of that name; throws UsageError naming `field` and the kinds for any other.
ModelKind model_kind_named(const std::string& name, const std::string& field);

// A GNN's section (model: of a node classifier, or of a link predictor with a GNN encoder):
// its kind and shape. The R-GCN fields apply to kind rgcn only, target_type to the
// relational kinds of node classification; parse_job refuses them elsewhere.
struct GnnSpec {
  ModelKind kind = ModelKind::kGraphSage;
  int64_t hidden = 128;
  int layers = 2;
  int heads = 4;  // GAT only; hidden must be a multiple of it
  double dropout = 0.5;
  double input_dropout = 0;  // of the input features, before the first layer
  bool trim = true;
  // R-GCN's weight decomposition (none, basis, block) and its size.
  std::string decomposition = "none";
  int bases = 0;
  int blocks = 0;
  // The node type classified (empty: any; else every seed of every split must have it).
  std::string target_type;
  // kind registered: the name its factory was registered under (model.name).
  std::string name;

  // rgcn and hetero_sage: they run on heterogeneous graphs.
  bool relational() const { return kind == ModelKind::kRgcn || kind == ModelKind::kHeteroSage; }
  // The heads the model is built with: `heads` for GAT, 1 for the others.
  int model_heads() const { return kind == ModelKind::kGat ? heads : 1; }
  bool registered() const { return kind == ModelKind::kRegistered; }
  // mf: no layers, no neighbourhood; hidden, layers, heads, dropout and sampling.fanouts do
  // not apply (the sampler draws no neighbours for it).
  bool matrix_factorisation() const { return kind == ModelKind::kMf; }
  // The kind as a model names it: "graphsage", ..., or "registered model 'NAME'".
  std::string description() const;
};

// A link-prediction job's own fields (task: link_prediction); see examples/README.md.
struct LinkPredictionSpec {
  // model
  // model.encoder: a GNN (its kind and shape in JobConfig::model), or none: each entity's
  // embedding is its representation (training/kg_trainer.h).
  bool gnn_encoder = false;
  LinkDecoder decoder = LinkDecoder::kDistMult;
  int transe_norm = 1;           // transe: 1 or 2
  int64_t dim = 128;             // entity and relation embedding size
  // Reciprocal relations (Lacroix et al.; LibKGE's reciprocal_relations_model): head
  // prediction (?, r, t) is tail prediction (t, r', ?) with a relation r' of its own.
  bool reciprocal = false;
  double init_std = 1e-3;        // embeddings start N(0, init_std)
  // model.node_bias (GNN encoders but mf, whose rows carry theirs): a learnt bias per node,
  // 0 at first, added to an edge's score (b_src + b_dst): in a rating regression the user's
  // and the movie's offsets from the training mean, which a dot product of encodings
  // cannot add on its own. train.regularizer: l2 adds regularization * (b_src^2 + b_dst^2)
  // per positive.
  bool node_bias = false;
  // negatives
  int64_t negatives = 256;       // k per chunk
  int64_t chunk_size = 256;      // positives sharing one set of negatives
  double degree_fraction = 0.0;  // share of negatives drawn by degree
  // Where a target edge type's training negatives are drawn: "all" of its destination
  // type's nodes, or the "trained" ones, that some training edge of it ends in. With
  // trained, a node first seen after training (a movie first rated in the test period) is
  // never a training negative, so its learnt input row keeps its initial value and its
  // features decide its score. Evaluation draws among all either way.
  std::string negative_candidates = "all";
  bool strict = false;
  // train
  LinkLoss loss = LinkLoss::kSoftmax;  // mse: GNN encoders only (rating regression)
  double margin = 1.0;
  // Of embedding rows: encoder none, and mf (its rows' squared norms and biases, per positive).
  Regularizer regularizer = Regularizer::kNone;
  double regularization = 0.0;   // its weight, per positive
  // eval
  int64_t eval_negatives = 0;    // 0: rank against all entities; K: against K sampled
  int64_t eval_block = 4096;     // entities per streamed block of ranking
  int eval_every = 1;            // rank after every N-th epoch (and after the last)
  // Link prediction on one edge type of a heterogeneous graph (model.target_edge: [src
  // type, relation, dst type], e.g. [user, rates, movie]; training/gnn_link_trainer.h): its
  // edges are the positives, the ones held out and scored, and its destination type the
  // negatives. Empty: every edge, negatives from every node.
  std::vector<std::string> target_edge;
  // model.input: "features", or "learnt": the relational encoder's input is a learnt row
  // per node (one-hot, as for a featureless graph; PyG's nn.Embedding per node type).
  std::string input = "features";
  bool learnt_input() const { return input == "learnt"; }
  // model.input as a map, {user: shared, movie: features+learnt}: what each node type's
  // nodes read in the first layer (ModelConfig::type_inputs): learnt (a row each), shared
  // (one row per type; an inductive encoding: such a node is what its neighbours are),
  // features, or features+learnt (both summed: a node first seen after training is
  // encoded from its features). Types not named: learnt. Empty for a single input.
  std::map<std::string, std::string> type_inputs;
  // embeddings (encoder: none): where the entity table lives. memory: sharded over the
  // partitions' processes (embeddings/embedding_shard.h); disk: split into
  // embedding_partitions files in embedding_dir, at most embedding_buffer of them in memory
  // (embeddings/partition_buffer.h; one graph partition, one trainer).
  std::string embedding_storage = "memory";
  int embedding_partitions = 8;
  int embedding_buffer = 4;
  std::string embedding_dir;  // absolute; empty: <output>/embeddings
  bool embedding_prefetch = true;
  bool on_disk() const { return embedding_storage == "disk"; }
  // train.loss: mse: regress each target edge's value (its one edge feature, a MovieLens
  // rating) from its ends' encodings instead of ranking it against negatives; evaluation
  // reports RMSE (training/rating_metrics.h).
  bool regression() const { return loss == LinkLoss::kMse; }
};

struct JobConfig {
  Task task = Task::kNodeClassification;
  GnnSpec model;            // node classification, and link prediction's GNN encoder
  LinkPredictionSpec link;  // link prediction only
  // data
  std::string partitions;  // absolute; empty when the job partitions a dataset itself
  std::string dataset;     // absolute; empty unless given (a named dataset: its folder)
  std::string format = "npy";
  // data.remap_ids, data.undirected: how an edge list is read (partitioner/readers.h
  // ReadOptions): sparse or named ids numbered in order of first appearance; the graph
  // made symmetric.
  bool remap_ids = false;
  bool undirected = false;
  bool generate = false;
  GenerateSpec generate_spec;
  int num_partitions = 2;
  // Link prediction on a dataset or generated graph: the fractions of its edges held out
  // for validation and test when the job prepares its partitions (partitioner/splits.h
  // hold_out_edges); they are then not in the graph the job trains on. Node
  // classification: holdout_val is the share of the training nodes moved to validation
  // (data.holdout.val; a seeded draw of data.split), holdout_test is 0.
  double holdout_val = 0.0;
  double holdout_test = 0.0;
  bool holdout_by_time = false;  // data.holdout.by: time: the latest links (edge times)
  // data.holdout.history: keep (a time split with sampling.temporal: {time: edge}): the
  // held-out links also stay in the graph, as history for the seeds after them
  // (partitioner/splits.h HeldOut::kKeepAsHistory); drop (default): they leave it.
  bool holdout_keep_history = false;
  // data.split: the seed of what the job draws when it prepares a dataset or generated
  // graph (the node split of a format that has none, LINQS'; data.holdout's cuts) and of
  // its partitioning. kind standard: kStandardSplitSeed, the same split for every job of
  // the dataset; kind random: data.split.seed (data.split_seed: N is {kind: random, seed:
  // N}). Never train.seed: a new training seed trains on the same split and partitions.
  // A split the dataset's files carry (npy's train_idx, triples' valid.txt, ntriples'
  // testSet.tsv) is kept either way.
  static constexpr uint64_t kStandardSplitSeed = 1;
  bool random_split = false;
  uint64_t data_split_seed = kStandardSplitSeed;
  uint64_t split_seed() const { return data_split_seed; }
  // Feature transforms applied when the job prepares a dataset or generated graph
  // (partitioner/feature_transforms.h), in their text form: "normalize_features", ...
  std::vector<std::string> transforms;
  // sampling
  std::vector<int64_t> fanouts = {10, 10};
  // sampling.fanouts as a mapping (heterogeneous graphs, as PyG's num_neighbors dict): per
  // edge type, named by its relation or as "src_type,relation,dst_type", its list, in which
  // 0 leaves the type out at that hop; the key `default` gives `fanouts` (the list of every
  // type not named; without it every edge type must be named). Resolved against the
  // graph's edge types by fanout_setting().
  std::vector<std::pair<std::string, std::vector<int64_t>>> fanouts_by_type;
  int64_t batch_size = 512;
  int prefetch = 2;  // batches each trainer's sampler keeps in flight
  bool replace = false;
  // The cache of rows owned by other partitions, one per partition on each node (its
  // samplers share it; graph/row_cache.h): its budget in MiB (0: no cache) and the policy
  // that fills it.
  int64_t feature_cache_mb = 0;
  std::string feature_cache_policy = "degree";
  // Temporal sampling (sampling.temporal; graph/hop_sampler.h TemporalMode): "" for none,
  // "node" or "edge" times; "uniform" or "last"; and whether training batches are cut in
  // time order (seeds by their time) rather than shuffled.
  std::string temporal_time;
  std::string temporal_strategy = "uniform";
  bool time_ordered = false;
  bool temporal() const { return !temporal_time.empty(); }
  // features
  std::string feature_storage = "auto";  // where each node keeps its partition's attributes
  // train
  int epochs = 5;
  Optimizer optimizer = Optimizer::kAdam;
  double learning_rate = 0.01;
  double weight_decay = 0.0;
  double momentum = 0.9;
  int trainers_per_partition = 1;
  int threads = 1;
  uint64_t seed = 1;
  int64_t eval_batch_size = 1024;
  // Recovery (jobs submitted to a head; training/cluster_job.h): how many times a job
  // that lost a node is placed again and resumed from its last checkpoint before it
  // fails, and how often (in steps) it checkpoints inside an epoch (0: at epoch ends
  // only), which bounds the steps a loss re-does.
  int max_restarts = 3;
  int64_t checkpoint_every_steps = 0;
  // train.select: unset, best_val when the job has validation (held-out nodes or edges,
  // and evaluation on), else last; resolved by the driver (training/job_driver.h).
  std::optional<SelectMode> select;
  EarlyStopping early_stopping;  // train.early_stopping: with best_val only
  // cluster: at most this many partitions, each with its trainers, on one node.
  int partitions_per_node = 1;
  // output
  std::string output = "runs/job";  // absolute after loading

  // The folder the job trains on: `partitions`, or OUTPUT/partitions.
  std::string partition_dir() const;

  bool link_prediction() const { return task == Task::kLinkPrediction; }
  // Link prediction with a GNN encoder (model.encoder graphsage, gcn, gat, rgcn or
  // hetero_sage) over sampled subgraphs: the fields of node classification's model and
  // sampling apply, `model` is the encoder and link.dim its output width
  // (training/gnn_link_trainer.h).
  bool link_gnn() const { return link_prediction() && link.gnn_encoder; }

  // Trainers: k per partition; trainer t serves partition t / k and trains on the
  // (t % k)-th of k contiguous shares of that partition's seeds.
  int num_trainers() const { return num_partitions * trainers_per_partition; }
  int part_of_trainer(int trainer) const { return trainer / trainers_per_partition; }
  // The node (of `num_nodes`) that hosts partition `part`: its partition actor, and its
  // trainers with their samplers and allreduce members (so that batches reach trainers by
  // move). Round robin: partition p on node p mod num_nodes.
  static int node_of_partition(int part, int num_nodes) { return part % num_nodes; }
  // Trainer t's share [first, second) of its partition's `count` seeds.
  std::pair<int64_t, int64_t> share_of_trainer(int trainer, int64_t count) const {
    return share_of(count, trainer % trainers_per_partition, trainers_per_partition);
  }
};

// Parses and validates a job file. Throws UsageError naming the file and the field: an
// unknown field, a wrong type, a value out of range, a missing or contradictory data
// source, fanouts that do not match the layers, a path that does not exist.
// A named dataset (data.dataset: cora) missing from the cache is downloaded here, with a
// message saying so; parse_job only resolves the name to its folder.
JobConfig load_job(const std::string& path);
// The same from YAML text; `base_dir` resolves relative paths, `name` names the source.
JobConfig parse_job(const std::string& yaml, const std::string& base_dir, const std::string& name = "job");
// The partition and sampler actors' "fanouts" setting (graph/hop_sampler.h,
// parse_fanout_table) for a graph with `edge_types` (none: homogeneous). Throws UsageError
// naming sampling.fanouts and the edge type: one that is not in the graph (the graph's are
// listed), a relation name that several edge types share, an edge type with no list and
// no `default`.
std::string fanout_setting(const JobConfig& job, const std::vector<EdgeType>& edge_types);
// The job as YAML with every field spelled out and absolute paths: what a trainer on
// another machine is given, and what a run writes beside its results.
std::string job_to_yaml(const JobConfig& job);

// How the job reaches the actors that run it. An actor is spawned with string settings
// (runtime/host.h: the same for every actor type, carried by daemons that know no job), so
// the job crosses the wire in one canonical serialised form, job_to_yaml's, the form a run
// also writes as job.yaml, and each process decodes it once for all the actors it hosts.
// Not a CAF inspect overload: that would be a second encoding of every field, to keep in
// step with the parser, for settings that are strings all the way through the runtime.
//
// The job of a "job" setting: parse_job(text, "/", name) the first time this process sees
// the text (its validation and errors, named `name`), the same decoded object after that
// (the process keeps its 16 most recent jobs). Thread-safe.
std::shared_ptr<const JobConfig> job_from_setting(const std::string& text, const std::string& name);

}  // namespace partita
