// Job files: defaults, relative paths, the round trip a trainer relies on, and bad files
// rejected with the field named.
#include "training/job_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "actors/actor_types.h"
#include "base/error.h"
#include "datasets/dataset_cache.h"
#include "datasets/loopback_http.h"
#include "graph/neighbor_sampler.h"
#include "partitioner/generators.h"
#include "partitioner/partition_stores.h"
#include "partitioned_graph.h"
#include "partitioner/partition_format.h"
#include "training/job_driver.h"
#include "test_util.h"

namespace partita {
namespace {

namespace fs = std::filesystem;

// A job over a (fake) partition folder in `dir`, plus `extra` YAML.
std::string job_text(const std::string& extra) { return "data: {partitions: parts}\n" + extra; }

class JobConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PartitionOptions options;
    options.num_parts = 3;
    partition_dataset(testing::sbm_graph(300), options, dir_ / "parts");
  }
  JobConfig parse(const std::string& text) { return parse_job(text, dir_.path(), "job.yaml"); }
  // The message of the UsageError that parsing `text` throws.
  std::string error_of(const std::string& text) {
    try {
      parse(text);
    } catch (const UsageError& e) {
      return e.what();
    }
    ADD_FAILURE() << "accepted:\n" << text;
    return "";
  }

  testing::TempDir dir_;
};

// An integer past 64 bits is out of range, not "not an integer"; YAML nested past what the
// parser takes is named as such, not "bad file".
TEST_F(JobConfigTest, HugeIntegersAndDeepNestingAreNamed) {
  EXPECT_CONTAINS(error_of(job_text("train: {threads: 99999999999999999999}\n")),
                  "train.threads: must be at most");
  EXPECT_CONTAINS(error_of(job_text("train: {epochs: -99999999999999999999}\n")),
                  "train.epochs: must be at least 1, got -99999999999999999999");
  EXPECT_CONTAINS(error_of(job_text("train: {epochs: 12x}\n")), "train.epochs: expected an integer, got '12x'");
  const std::string deep = "train: " + std::string(3000, '[') + std::string(3000, ']') + "\n";
  EXPECT_CONTAINS(error_of(job_text(deep)), "nested too deeply");
}

TEST_F(JobConfigTest, DefaultsAndRelativePaths) {
  JobConfig job = parse(job_text(""));
  EXPECT_EQ(job.partitions, (fs::path(dir_.path()) / "parts").string());
  EXPECT_EQ(job.partition_dir(), job.partitions);
  EXPECT_EQ(job.num_partitions, 3);  // the folder's
  EXPECT_EQ(job.num_trainers(), 3);
  EXPECT_EQ(job.output, (fs::path(dir_.path()) / "runs/job").string());
  EXPECT_EQ(job.model.kind, ModelKind::kGraphSage);
  EXPECT_EQ(job.model.layers, 2);
  EXPECT_EQ(job.fanouts, (std::vector<int64_t>{10, 10}));
  EXPECT_EQ(job.optimizer, Optimizer::kAdam);
  EXPECT_EQ(job.trainers_per_partition, 1);
  EXPECT_EQ(job.max_restarts, 3);
  EXPECT_EQ(job.checkpoint_every_steps, 0);
  EXPECT_EQ(job.partitions_per_node, 1);
  EXPECT_TRUE(job.model.trim);
  EXPECT_EQ(job.feature_cache_mb, 0) << "no cache unless asked";
  EXPECT_EQ(job.feature_storage, "auto");
}

TEST_F(JobConfigTest, ReadsEveryFieldAndRoundTripsThroughYaml) {
  JobConfig job = parse(job_text(R"(
model: {kind: gat, hidden: 64, layers: 3, heads: 2, dropout: 0.25, input_dropout: 0.6, trim: false}
sampling: {fanouts: [15, 10, -1], batch_size: 100, prefetch: 3, replace: true, feature_cache_mb: 64,
           feature_cache_policy: sieve}
features: {storage: mapped}
train: {epochs: 7, optimizer: sgd, learning_rate: 0.1, weight_decay: 0.0005, momentum: 0.5,
        trainers_per_partition: 2, threads: 2, seed: 42, eval_batch_size: 64, max_restarts: 5,
        checkpoint_every_steps: 50}
cluster: {partitions_per_node: 3}
output: /tmp/somewhere
)"));
  EXPECT_EQ(job.max_restarts, 5);
  EXPECT_EQ(job.checkpoint_every_steps, 50);
  EXPECT_EQ(job.partitions_per_node, 3);
  EXPECT_EQ(job.model.kind, ModelKind::kGat);
  EXPECT_EQ(job.model.hidden, 64);
  EXPECT_EQ(job.model.heads, 2);
  EXPECT_DOUBLE_EQ(job.model.dropout, 0.25);
  EXPECT_DOUBLE_EQ(job.model.input_dropout, 0.6);
  EXPECT_FALSE(job.model.trim);
  EXPECT_EQ(job.fanouts, (std::vector<int64_t>{15, 10, -1}));
  EXPECT_EQ(job.prefetch, 3);
  EXPECT_TRUE(job.replace);
  EXPECT_EQ(job.feature_cache_mb, 64);
  EXPECT_EQ(job.feature_cache_policy, "sieve");
  EXPECT_EQ(job.feature_storage, "mapped");
  EXPECT_EQ(job.epochs, 7);
  EXPECT_EQ(job.optimizer, Optimizer::kSgd);
  EXPECT_EQ(job.seed, 42u);
  EXPECT_EQ(job.output, "/tmp/somewhere");
  EXPECT_EQ(job.num_trainers(), 6);
  EXPECT_EQ(job.part_of_trainer(3), 1);
  EXPECT_EQ(job.share_of_trainer(2, 11), std::make_pair(int64_t{0}, int64_t{5}));
  EXPECT_EQ(job.share_of_trainer(3, 11), std::make_pair(int64_t{5}, int64_t{11}));
  // Partitions round robin over the nodes; one node hosts them all in one process.
  EXPECT_EQ(JobConfig::node_of_partition(2, 1), 0);
  EXPECT_EQ(JobConfig::node_of_partition(1, 2), 1);
  EXPECT_EQ(JobConfig::node_of_partition(2, 2), 0);

  // What a trainer on a daemon reads back is the same job, number for number.
  JobConfig back = parse_job(job_to_yaml(job), "/elsewhere", "sent job");
  EXPECT_EQ(job_to_yaml(back), job_to_yaml(job));
  EXPECT_EQ(back.partitions, job.partitions);
  EXPECT_EQ(back.learning_rate, job.learning_rate);
  EXPECT_EQ(back.weight_decay, job.weight_decay);
}

// The actors of a job read it from their "job" setting: one decode per process, the same
// typed job for all of them; a text that is no job fails naming its source.
TEST_F(JobConfigTest, AJobSettingIsDecodedOncePerProcess) {
  const std::string text = job_to_yaml(parse(job_text("model: {kind: gat, hidden: 64, heads: 2}\n")));
  const std::shared_ptr<const JobConfig> first = job_from_setting(text, "the job sent by the driver");
  const std::shared_ptr<const JobConfig> second = job_from_setting(text, "the job sent by the driver");
  EXPECT_EQ(first.get(), second.get());
  EXPECT_EQ(first->model.kind, ModelKind::kGat);
  EXPECT_EQ(first->model.model_heads(), 2);
  EXPECT_EQ(job_to_yaml(*first), text);
  const std::string other = job_to_yaml(parse(job_text("model: {kind: gcn}\n")));
  EXPECT_NE(job_from_setting(other, "sent").get(), first.get());
  try {
    job_from_setting("data: {partitions: " + dir_.path() + "/nowhere}\n", "the job sent by the driver");
    ADD_FAILURE() << "a job over a missing folder was decoded";
  } catch (const UsageError& e) {
    EXPECT_CONTAINS(e.what(), "the job sent by the driver: data.partitions:");
  }
}

// A host application's model: kind (or encoder) registered with its name, which the job
// carries to every trainer; the parser needs no registry for it.
TEST_F(JobConfigTest, ARegisteredModelIsNamedAndRoundTrips) {
  const JobConfig nc = parse(job_text("model: {kind: registered, name: my_sage, hidden: 48, layers: 2}\n"));
  EXPECT_TRUE(nc.model.registered());
  EXPECT_FALSE(nc.model.relational());
  EXPECT_EQ(nc.model.name, "my_sage");
  EXPECT_EQ(nc.model.description(), "registered model 'my_sage'");
  const JobConfig link = parse("task: link_prediction\n" + job_text("model: {encoder: registered, name: my_sage, dim: 24}\n"));
  EXPECT_TRUE(link.link_gnn());
  EXPECT_TRUE(link.model.registered());
  EXPECT_EQ(link.link.dim, 24);
  for (const JobConfig* job : {&nc, &link}) {
    const JobConfig back = parse_job(job_to_yaml(*job), "/elsewhere", "sent job");
    EXPECT_EQ(back.model.kind, ModelKind::kRegistered);
    EXPECT_EQ(back.model.name, "my_sage");
    EXPECT_EQ(job_to_yaml(back), job_to_yaml(*job));
  }
}

// The closed choices are typed; a GNN encoder is the model section's kind.
TEST_F(JobConfigTest, ChoicesAreTyped) {
  const JobConfig nc = parse(job_text("model: {kind: hetero_sage}\ntrain: {optimizer: sgd}\n"));
  EXPECT_EQ(nc.task, Task::kNodeClassification);
  EXPECT_TRUE(nc.model.relational());
  EXPECT_EQ(nc.model.model_heads(), 1);
  EXPECT_EQ(nc.optimizer, Optimizer::kSgd);
  const JobConfig link = parse("task: link_prediction\n" + job_text("model: {encoder: gcn}\n"));
  EXPECT_EQ(link.task, Task::kLinkPrediction);
  EXPECT_TRUE(link.link_gnn());
  EXPECT_EQ(link.model.kind, ModelKind::kGcn);
  EXPECT_EQ(link.link.decoder, LinkDecoder::kDot);
  EXPECT_EQ(link.link.loss, LinkLoss::kBce);
  EXPECT_EQ(link.optimizer, Optimizer::kAdam);
  const JobConfig kg = parse("task: link_prediction\n" + job_text(""));
  EXPECT_FALSE(kg.link_gnn());
  EXPECT_EQ(kg.optimizer, Optimizer::kAdagrad);
  EXPECT_EQ(model_kind_named("rgcn", "--model"), ModelKind::kRgcn);
  try {
    model_kind_named("mlp", "--model");
    ADD_FAILURE() << "mlp was taken for a model kind";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--model: 'mlp' is not one of: graphsage, gcn, gat, rgcn, hetero_sage");
  }
}

TEST_F(JobConfigTest, ReadsEveryLinkPredictionFieldAndRoundTripsThroughYaml) {
  JobConfig job = parse("task: link_prediction\n" + job_text(R"(
model: {encoder: none, decoder: transe, transe_norm: 2, dim: 48, reciprocal: true, init_std: 0.05}
negatives: {k: 64, chunk_size: 16, degree_fraction: 0.25, strict: true}
sampling: {batch_size: 128}
train: {epochs: 3, loss: margin, margin: 4.5, regularizer: l2, regularization: 0.001, learning_rate: 0.3}
eval: {negatives: 100, block: 512, every: 2}
)"));
  EXPECT_TRUE(job.link_prediction());
  EXPECT_EQ(job.optimizer, Optimizer::kAdagrad);
  EXPECT_EQ(job.link.decoder, LinkDecoder::kTransE);
  EXPECT_EQ(job.link.transe_norm, 2);
  EXPECT_EQ(job.link.dim, 48);
  EXPECT_TRUE(job.link.reciprocal);
  EXPECT_DOUBLE_EQ(job.link.init_std, 0.05);
  EXPECT_EQ(job.link.negatives, 64);
  EXPECT_EQ(job.link.chunk_size, 16);
  EXPECT_DOUBLE_EQ(job.link.degree_fraction, 0.25);
  EXPECT_TRUE(job.link.strict);
  EXPECT_EQ(job.link.loss, LinkLoss::kMargin);
  EXPECT_DOUBLE_EQ(job.link.margin, 4.5);
  EXPECT_EQ(job.link.regularizer, Regularizer::kL2);
  EXPECT_EQ(job.link.eval_negatives, 100);
  EXPECT_EQ(job.link.eval_block, 512);
  EXPECT_EQ(job.link.eval_every, 2);
  JobConfig back = parse_job(job_to_yaml(job), "/elsewhere", "sent job");
  EXPECT_EQ(job_to_yaml(back), job_to_yaml(job));
  EXPECT_EQ(parse("task: link_prediction\n" + job_text("eval: {negatives: all}")).link.eval_negatives, 0);
  // Node-classification fields are not link-prediction fields, and the other way round.
  EXPECT_NE(error_of("task: link_prediction\n" + job_text("model: {kind: gcn}")).find("model.kind: unknown field"),
            std::string::npos);
  EXPECT_NE(error_of(job_text("negatives: {k: 4}")).find("negatives: unknown field"), std::string::npos);
  EXPECT_NE(error_of("task: ranking\n" + job_text("")).find("task: 'ranking' is not one of"), std::string::npos);
  // A relational encoder's input: the features, or a learnt row per node.
  const JobConfig learnt = parse("task: link_prediction\n" + job_text("model: {encoder: rgcn, input: learnt}"));
  EXPECT_TRUE(learnt.link.learnt_input());
  EXPECT_TRUE(parse_job(job_to_yaml(learnt), "/elsewhere", "sent job").link.learnt_input());
  EXPECT_FALSE(parse("task: link_prediction\n" + job_text("model: {encoder: rgcn}")).link.learnt_input());
  EXPECT_CONTAINS(error_of("task: link_prediction\n" + job_text("model: {encoder: rgcn, input: ids}")), "model.input");
  EXPECT_CONTAINS(error_of("task: link_prediction\n" + job_text("model: {encoder: graphsage, input: learnt}")),
                  "model.input: a learnt input row per node is for encoder: rgcn or hetero_sage, not graphsage");
  // Per node type: a row per node (learnt), one shared by the type's nodes (shared), the
  // features, or the features plus a row per node (features+learnt).
  const JobConfig shared =
      parse("task: link_prediction\n" +
            job_text("model: {encoder: hetero_sage, input: {movie: features+learnt, user: shared}}"));
  EXPECT_TRUE(shared.link.learnt_input());
  const std::map<std::string, std::string> inputs = {{"movie", "features+learnt"}, {"user", "shared"}};
  EXPECT_EQ(shared.link.type_inputs, inputs);
  EXPECT_EQ(parse_job(job_to_yaml(shared), "/elsewhere", "sent job").link.type_inputs, inputs);
  // Training negatives among the destinations of training edges only.
  const JobConfig trained = parse("task: link_prediction\n" + job_text("negatives: {k: 3, candidates: trained}"));
  EXPECT_EQ(trained.link.negative_candidates, "trained");
  EXPECT_EQ(parse_job(job_to_yaml(trained), "/elsewhere", "sent job").link.negative_candidates, "trained");
  EXPECT_EQ(parse("task: link_prediction\n" + job_text("")).link.negative_candidates, "all");
  EXPECT_CONTAINS(error_of("task: link_prediction\n" + job_text("negatives: {candidates: seen}")),
                  "negatives.candidates: 'seen' is not one of: all, trained");
  EXPECT_CONTAINS(error_of("task: link_prediction\n" + job_text("model: {encoder: hetero_sage, input: {user: none}}")),
                  "model.input.user: 'none' is not one of: learnt, shared, features, features+learnt");
  EXPECT_CONTAINS(error_of("task: link_prediction\n" + job_text("model: {encoder: hetero_sage, input: {}}")),
                  "model.input: expected learnt, features or {type: learnt | shared | features | features+learnt, ...}");
  EXPECT_CONTAINS(error_of("task: link_prediction\n" + job_text("model: {encoder: graphsage, input: {user: shared}}")),
                  "model.input: a learnt input row per node is for encoder: rgcn or hetero_sage, not graphsage");
}

// The entity rows' optimiser: Adagrad (lr 0.1) by default, SparseAdam (lr 0.001 unless
// given) on request; not on disk, whose files hold one accumulator per row.
TEST_F(JobConfigTest, SparseAdamIsAnOptimiserOfEntityRowsInMemory) {
  const JobConfig adam = parse("task: link_prediction\n" + job_text("train: {optimizer: sparse_adam}"));
  EXPECT_EQ(adam.optimizer, Optimizer::kSparseAdam);
  EXPECT_DOUBLE_EQ(adam.learning_rate, 0.001);
  const JobConfig back = parse_job(job_to_yaml(adam), "/elsewhere", "sent job");
  EXPECT_EQ(back.optimizer, Optimizer::kSparseAdam);
  EXPECT_DOUBLE_EQ(back.learning_rate, 0.001);
  EXPECT_DOUBLE_EQ(
      parse("task: link_prediction\n" + job_text("train: {optimizer: sparse_adam, learning_rate: 0.02}")).learning_rate,
      0.02);
  EXPECT_DOUBLE_EQ(parse("task: link_prediction\n" + job_text("")).learning_rate, 0.1);
  EXPECT_CONTAINS(error_of("task: link_prediction\n" +
                           job_text("train: {optimizer: sparse_adam}\nembeddings: {storage: disk}")),
                  "train.optimizer: sparse_adam keeps two moments per entity row");
  EXPECT_CONTAINS(error_of("task: link_prediction\n" + job_text("train: {optimizer: adam}")),
                  "train.optimizer: 'adam' is not one of");
  // A GNN encoder's dense weights have no rows to apply SparseAdam to.
  EXPECT_CONTAINS(error_of("task: link_prediction\n" + job_text("model: {encoder: graphsage}\ntrain: {optimizer: sparse_adam}")),
                  "train.optimizer: 'sparse_adam' is not one of");
}

TEST_F(JobConfigTest, GeneratedDataTrainsOnTheOutputsPartitions) {
  JobConfig job = parse("data: {generate: {nodes: 1000, classes: 4}, num_partitions: 3}\noutput: out\n");
  EXPECT_TRUE(job.generate);
  EXPECT_EQ(job.generate_spec.nodes, 1000);
  EXPECT_EQ(job.num_partitions, 3);
  EXPECT_EQ(job.partition_dir(), (fs::path(dir_.path()) / "out" / "partitions").string());
}

TEST_F(JobConfigTest, TransformsApplyToPreparedDataOnly) {
  JobConfig job = parse("data: {generate: {nodes: 1000, classes: 4}, transforms: [normalize_features, 'multi_hot:0']}\n");
  EXPECT_EQ(job.transforms, (std::vector<std::string>{"normalize_features", "multi_hot:0"}));
  EXPECT_CONTAINS(error_of("data: {generate: {nodes: 1000}, transforms: [normalize_features, normalise]}\n"),
                  "job.yaml: data.transforms[1]: unknown transform 'normalise' (known: normalize_features, standardize");
  EXPECT_CONTAINS(error_of("data: {generate: {nodes: 1000}, transforms: normalize_features}\n"),
                  "job.yaml: data.transforms: expected a list");
  EXPECT_CONTAINS(error_of("data: {partitions: parts, transforms: [standardize]}\n"),
                  "job.yaml: data.transforms: apply when the job prepares a dataset or generated graph");
}

TEST_F(JobConfigTest, EdgeListOptionsAreReadForEdgeListsOnly) {
  std::ofstream(dir_ / "g.txt") << "0 1\n";
  fs::create_directories(dir_ / "g");
  JobConfig job = parse("data: {dataset: g.txt, format: edgelist, remap_ids: true, undirected: true}\n");
  EXPECT_TRUE(job.remap_ids);
  EXPECT_TRUE(job.undirected);
  EXPECT_FALSE(parse("data: {dataset: g.txt, format: edgelist}\n").remap_ids);
  EXPECT_CONTAINS(error_of("data: {dataset: g, format: npy, remap_ids: true}\n"),
                  "job.yaml: data.remap_ids: applies to a dataset of format: edgelist only");
  EXPECT_CONTAINS(error_of("data: {generate: {nodes: 1000}, undirected: true}\n"),
                  "job.yaml: data.undirected: applies to a dataset of format: edgelist only");
  EXPECT_CONTAINS(error_of("data: {dataset: g.txt, format: edgelist, undirected: yes please}\n"),
                  "data.undirected");
}

TEST_F(JobConfigTest, PreparedEdgeListIsRemappedAndUndirected) {
  std::ofstream(dir_ / "pmids.txt") << "19127292 17363749\n17363749 9000000000000000\n9000000000000000 19127292\n"
                                       "17363749 19127292\n";
  JobConfig job = parse("data: {dataset: pmids.txt, format: edgelist, remap_ids: true, undirected: true, "
                        "num_partitions: 1}\noutput: out\n");
  prepare_data(job, 1);
  const PartitionFolder folder(job.partition_dir());
  EXPECT_EQ(folder.meta().num_nodes, 3);
  EXPECT_EQ(folder.meta().num_edges, 6);  // a triangle, each side both ways once
}

TEST_F(JobConfigTest, PreparedDataHoldsTheTransformedFeaturesAndSaysSo) {
  JobConfig job = parse("data: {generate: {nodes: 400, classes: 4, features: 8}, num_partitions: 1, "
                        "transforms: [normalize_features]}\noutput: out\n");
  prepare_data(job, 1);
  const PartitionFolder folder(job.partition_dir());
  EXPECT_EQ(folder.meta().transforms, std::vector<std::string>{"normalize_features"});
  const PartitionData part = folder.load_part(0);
  const Span<const float> x = part.x->as<float>();
  for (int64_t i = 0; i < 400; ++i) {
    double sum = 0;
    for (int64_t c = 0; c < 8; ++c) {
      ASSERT_GE(x[i * 8 + c], 0.0f);
      sum += x[i * 8 + c];
    }
    ASSERT_LE(sum, 1.0 + 1e-5) << "row " << i;
  }
  // Other transforms are other data: the folder is made again, not reused.
  JobConfig other = parse("data: {generate: {nodes: 400, classes: 4, features: 8}, num_partitions: 1, "
                          "transforms: [standardize]}\noutput: out\n");
  prepare_data(other, 1);
  EXPECT_EQ(PartitionFolder(other.partition_dir()).meta().transforms, std::vector<std::string>{"standardize"});
}

TEST_F(JobConfigTest, RelationalModelFieldsRoundTripAndAreCheckedPerKind) {
  JobConfig job = parse(job_text("model: {kind: rgcn, decomposition: basis, bases: 30, target_type: entity}\n"));
  EXPECT_EQ(job.model.kind, ModelKind::kRgcn);
  EXPECT_EQ(job.model.decomposition, "basis");
  EXPECT_EQ(job.model.bases, 30);
  EXPECT_EQ(job.model.target_type, "entity");
  const JobConfig again = parse_job(job_to_yaml(job), "/", "again");
  EXPECT_EQ(again.model.decomposition, "basis");
  EXPECT_EQ(again.model.bases, 30);
  EXPECT_EQ(again.model.blocks, 0);
  EXPECT_EQ(again.model.target_type, "entity");
  EXPECT_EQ(parse_job(job_to_yaml(parse(job_text(""))), "/", "again").model.target_type, "");
  EXPECT_CONTAINS(error_of(job_text("model: {kind: graphsage, target_type: paper}\n")),
                  "job.yaml: model.target_type: applies to the relational kinds (rgcn, hetero_sage), not graphsage");
  EXPECT_CONTAINS(error_of(job_text("model: {kind: hetero_sage, decomposition: block, blocks: 2}\n")),
                  "job.yaml: model.decomposition: applies to rgcn only, not hetero_sage");
  EXPECT_CONTAINS(error_of(job_text("model: {kind: rgcn, decomposition: basis}\n")),
                  "job.yaml: model.bases: basis decomposition needs bases > 0");
  EXPECT_CONTAINS(error_of(job_text("model: {kind: rgcn, decomposition: tucker}\n")),
                  "job.yaml: model.decomposition: 'tucker' is not one of: none, basis, block");
  EXPECT_CONTAINS(error_of(job_text("model: {kind: rgcnn}\n")), "graphsage, gcn, gat, rgcn, hetero_sage");
}

TEST_F(JobConfigTest, BadFilesNameTheField) {
  EXPECT_NE(error_of(job_text("sampling: {feature_cache_mb: -5}\n")).find("sampling.feature_cache_mb: must be at least 0"),
            std::string::npos);
  EXPECT_NE(error_of(job_text("sampling: {feature_cache_mb: 2000000}\n")).find("sampling.feature_cache_mb: must be at most 1048576, got 2000000"),
            std::string::npos);
  EXPECT_NE(error_of(job_text("sampling: {feature_cache_policy: lru}\n"))
                .find("sampling.feature_cache_policy: 'lru' is not one of: degree, frequency, sieve"),
            std::string::npos);
  EXPECT_EQ(parse(job_text("features: {storage: disk}\n")).feature_storage, "disk");
  EXPECT_NE(error_of(job_text("features: {storage: tape}\n")).find("features.storage: 'tape' is not one of"),
            std::string::npos);
  EXPECT_NE(error_of(job_text("features: {size: 3}\n")).find("features.size: unknown field"), std::string::npos);
  EXPECT_NE(error_of(job_text("modle: {}\n")).find("modle: unknown field"), std::string::npos);
  EXPECT_NE(error_of(job_text("model: {hiden: 3}\n")).find("model.hiden: unknown field"), std::string::npos);
  EXPECT_NE(error_of(job_text("train: {epochs: ten}\n")).find("train.epochs: expected an integer, got 'ten'"),
            std::string::npos);
  EXPECT_NE(error_of(job_text("train: {epochs: 0}\n")).find("train.epochs: must be at least 1"), std::string::npos);
  EXPECT_NE(error_of(job_text("model: {kind: mlp}\n")).find("model.kind: 'mlp' is not one of"), std::string::npos);
  EXPECT_NE(error_of(job_text("sampling: {fanouts: [10, 10, 5]}\n")).find("sampling.fanouts: has 3 entries but "
                                                                          "model.layers is 2"),
            std::string::npos);
  EXPECT_NE(error_of(job_text("sampling: {fanouts: [10, x]}\n")).find("sampling.fanouts[1]"), std::string::npos);
  EXPECT_NE(error_of("model: {}\n").find("data: missing"), std::string::npos);
  EXPECT_NE(error_of("data: {partitions: nowhere}\n").find("data.partitions"), std::string::npos);
  EXPECT_NE(error_of("data: {dataset: nowhere}\n").find("does not exist"), std::string::npos);
  // A name the system refuses (over 255 bytes) is named, not an uncaught filesystem_error.
  const std::string long_name(300, 'x');
  EXPECT_NE(error_of("data: {dataset: " + long_name + "}\n").find("data.dataset: "), std::string::npos);
  EXPECT_NE(error_of("data: {dataset: " + long_name + "}\n").find("File name too long"), std::string::npos);
  EXPECT_NE(error_of("data: {partitions: " + long_name + "}\n").find("File name too long"), std::string::npos);
  EXPECT_NE(error_of("data: {partitions: parts, generate: {}}\n").find("only one of"), std::string::npos);
  EXPECT_NE(error_of("data: [1, 2]\n").find("data: expected a mapping"), std::string::npos);
  EXPECT_NE(error_of("data: {partitions: parts}\nmodel: {dropout: 1.5}\n").find("model.dropout: must be in"),
            std::string::npos);
  EXPECT_NE(error_of("data: {partitions: parts}\nmodel: {input_dropout: 1}\n").find("model.input_dropout: must be in"),
            std::string::npos);
  EXPECT_NE(error_of(job_text("model: {kind: registered, name: my_sage, input_dropout: 0.5}\n"))
                .find("model.input_dropout: applies to the built-in kinds only"),
            std::string::npos);
  EXPECT_NE(error_of("data: {partitions: [parts\n").find("job.yaml: line"), std::string::npos);
  EXPECT_NE(error_of("").find("empty"), std::string::npos);
  EXPECT_NE(error_of(job_text("model: {kind: gat, hidden: 10, heads: 4}\n")).find("model.hidden: 10 is not a multiple"),
            std::string::npos);
  EXPECT_NE(error_of(job_text("train: {epochs: 2}\ntrain: {epochs: 3}\n")).find("train: given twice"),
            std::string::npos);
  EXPECT_NE(error_of("data: {partitions: parts, num_partitions: 2}\n").find("data.num_partitions: 2, but"),
            std::string::npos);
  EXPECT_NE(error_of(job_text("sampling: {workers: 2}\n")).find("sampling.workers: no longer a setting"),
            std::string::npos);
  EXPECT_THROW(load_job((fs::path(dir_.path()) / "missing.yaml").string()), UsageError);
}

// Found by fuzz/fuzz_job_yaml.cpp: a mapping or a list used as a key ended the process with
// an uncaught YAML::TypedBadConversion.
TEST_F(JobConfigTest, FanoutsPerEdgeTypeRoundTripAndNameTheirErrors) {
  JobConfig job = parse(job_text("sampling: {fanouts: {writes: [0, 0], \"paper,cites,paper\": [5, -1], "
                                 "default: [3, 2]}}\n"));
  EXPECT_EQ(job.fanouts, (std::vector<int64_t>{3, 2}));
  ASSERT_EQ(job.fanouts_by_type.size(), 2u);
  EXPECT_EQ(job.fanouts_by_type[0], (std::pair<std::string, std::vector<int64_t>>{"writes", {0, 0}}));
  JobConfig again = parse_job(job_to_yaml(job), dir_.path(), "round trip");
  EXPECT_EQ(again.fanouts, job.fanouts);
  EXPECT_EQ(again.fanouts_by_type, job.fanouts_by_type);

  const std::vector<EdgeType> types{{"author", "writes", "paper"},
                                    {"paper", "written_by", "author"},
                                    {"paper", "cites", "paper"},
                                    {"venue", "cites", "paper"}};
  EXPECT_EQ(fanout_setting(job, types), "0,0;3,2;5,-1;3,2");
  EXPECT_EQ(fanout_setting(parse(job_text("sampling: {fanouts: [4, 4]}\n")), types), "4,4");
  const auto setting_error = [&](const std::string& sampling) {
    try {
      fanout_setting(parse(job_text("sampling: " + sampling + "\n")), types);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    ADD_FAILURE() << "accepted " << sampling;
    return std::string();
  };
  EXPECT_CONTAINS(setting_error("{fanouts: {reads: [1, 1], default: [2, 2]}}"),
                  "'reads' is not an edge type of the graph (author,writes,paper; paper,written_by,author;");
  EXPECT_CONTAINS(setting_error("{fanouts: {cites: [1, 1], default: [2, 2]}}"),
                  "relation 'cites' names 2 edge types (paper,cites,paper, venue,cites,paper, ...)");
  EXPECT_CONTAINS(setting_error("{fanouts: {writes: [1, 1]}}"),
                  "edge type paper,written_by,author has no fanouts (name it, or give a `default` list)");
  EXPECT_CONTAINS(setting_error("{fanouts: {writes: [1, 1], \"author,writes,paper\": [2, 2], default: [1, 1]}}"),
                  "edge type author,writes,paper is given twice");
  try {
    fanout_setting(job, {});
    ADD_FAILURE() << "fanouts per edge type accepted on a homogeneous graph";
  } catch (const UsageError& e) {
    EXPECT_CONTAINS(e.what(), "fanouts per edge type need a heterogeneous graph");
  }

  EXPECT_CONTAINS(error_of(job_text("sampling: {fanouts: {writes: [1, 1, 1], default: [2, 2]}}\n")),
                  "sampling.fanouts.writes: has 3 entries but model.layers is 2");
  EXPECT_CONTAINS(error_of(job_text("sampling: {fanouts: {writes: [1, 1], default: [2]}}\n")),
                  "sampling.fanouts.default: has 1 entries but model.layers is 2");
  EXPECT_CONTAINS(error_of(job_text("sampling: {fanouts: {writes: [1, -2]}}\n")),
                  "sampling.fanouts.writes[1]: must be positive, 0 (none) or -1 (all neighbours)");
  EXPECT_CONTAINS(error_of(job_text("sampling: {fanouts: {default: [0, 2]}}\n")),
                  "sampling.fanouts.default[0]: must be positive or -1");
  EXPECT_CONTAINS(error_of(job_text("sampling: {fanouts: {}}\n")), "sampling.fanouts: expected a list per edge type");
}

// What a job's actors sample with per-edge-type fanouts (the setting fanout_setting makes,
// read by sampler_config_from as the partition and sampler actors read it): an edge type
// with fanout 0 never appears in a batch, over every paper of a small hetero graph, and the
// others keep their fanouts.
TEST(FanoutsPerEdgeTypeTest, ATypeWithFanoutZeroNeverAppearsInABatch) {
  HeteroOptions o;
  o.num_papers = 1500;
  o.num_authors = 700;
  o.num_venues = 10;
  o.threads = 1;
  const Dataset d = generate_hetero(o);
  const Topology topology = topology_from_dataset(d);
  testing::TempDir tmp;
  PartitionOptions options;
  options.num_parts = 2;
  partition_dataset(d, options, tmp / "parts");
  const JobConfig job = parse_job("data: {partitions: parts}\nsampling: {fanouts: {writes: [0, 0], cites: [3, 0], "
                                  "default: [2, 2]}, batch_size: 100}\n",
                                  tmp.path(), "job");
  // As the job driver resolves it: against the partition folder's edge types.
  const std::string setting = fanout_setting(job, PartitionFolder(job.partition_dir()).meta().edge_types);
  EXPECT_EQ(setting, "0,0;2,2;3,0;2,2;2,2");
  const SamplerConfig config = sampler_config_from({{"fanouts", setting}}, topology);
  NeighborSampler sampler(topology, config);
  std::map<int32_t, int64_t> edges_of_type;
  for (int64_t first = 0; first < o.num_papers; first += 100) {
    std::vector<int64_t> papers;
    for (int64_t p = first; p < std::min<int64_t>(first + 100, o.num_papers); ++p) papers.push_back(p);
    const MiniBatch b = sampler.sample(papers, {1, 0, static_cast<uint64_t>(first)});
    for (size_t k = 0; k < b.edge_types.size(); ++k) {
      ++edges_of_type[b.edge_types[k]];
      ASSERT_NE(b.edge_types[k], 0) << "an author-writes-paper edge in batch " << first / 100;
      // cites has fanout 0 at the second hop: its edges all end in a seed.
      if (b.edge_types[k] == 2) {
        ASSERT_LT(b.col[k], static_cast<int64_t>(papers.size()));
      }
    }
  }
  EXPECT_EQ(edges_of_type.count(0), 0u);
  EXPECT_GT(edges_of_type[2], 0);  // the graph has citations: the test can fail
  EXPECT_GT(edges_of_type[4], 0);
  ASSERT_GT(topology.csc(0).indices.rows(), 0);  // ... and authorship
}

TEST_F(JobConfigTest, KeysThatAreNotNamesAreNamed) {
  EXPECT_CONTAINS(error_of(job_text("? num_partitions: 2\n")), "job.yaml: the job: a key must be a name, not a list or mapping");
  EXPECT_CONTAINS(error_of(job_text("model: {[a, b]: 1}\n")), "job.yaml: model: a key must be a name");
  EXPECT_CONTAINS(error_of(job_text("train: {? {x: 1}: 2}\n")), "job.yaml: train: a key must be a name");
}

// Counts that size a resource stop at a stated limit, named with the field.
TEST_F(JobConfigTest, CountsThatSizeResourcesAreBounded) {
  EXPECT_NE(error_of(job_text("train: {threads: 100000}\n")).find("train.threads: must be at most 1024, got 100000"),
            std::string::npos);
  EXPECT_NE(error_of(job_text("train: {trainers_per_partition: 1000}\n"))
                .find("train.trainers_per_partition: must be at most 64"),
            std::string::npos);
  EXPECT_NE(error_of(job_text("sampling: {prefetch: 100000}\n")).find("sampling.prefetch: must be at most 64"),
            std::string::npos);
  EXPECT_NE(error_of(job_text("sampling: {fanouts: [10, 100000000]}\n")).find("sampling.fanouts[1]: must be at most"),
            std::string::npos);
  EXPECT_NE(error_of(job_text("model: {hidden: 10000000}\n")).find("model.hidden: must be at most 65536"),
            std::string::npos);
  EXPECT_NE(error_of("data: {generate: {nodes: 100000000000}}\n").find("data.generate.nodes: must be at most"),
            std::string::npos);
  EXPECT_NE(error_of("data: {generate: {}, num_partitions: 5000}\n").find("data.num_partitions: must be at most 1024"),
            std::string::npos);
  EXPECT_NE(error_of(job_text("train: {max_restarts: -1}\n")).find("train.max_restarts: must be at least 0"),
            std::string::npos);
  EXPECT_NE(error_of(job_text("train: {max_restarts: 5000}\n")).find("train.max_restarts: must be at most 1000"),
            std::string::npos);
  EXPECT_NE(error_of(job_text("train: {checkpoint_every_steps: -5}\n")).find("train.checkpoint_every_steps: must be at least 0"),
            std::string::npos);
  EXPECT_NE(error_of(job_text("cluster: {partitions_per_node: 0}\n")).find("cluster.partitions_per_node: must be at least 1"),
            std::string::npos);
  EXPECT_NE(error_of(job_text("cluster: {nodes: 3}\n")).find("cluster.nodes: unknown field"), std::string::npos);
}

// A job file is small; a huge one is refused before the YAML parser sees it (a 50 MB file
// with a 25M-item list in an unknown field took 68 s and 9.3 GB before its error).
TEST_F(JobConfigTest, HugeFilesAreRefusedBeforeParsing) {
  std::string huge = job_text("junk:\n");
  while (huge.size() <= JobLimits::kMaxJobBytes) huge += "- 1\n";
  EXPECT_NE(error_of(huge).find("job.yaml: " + std::to_string(huge.size()) + " bytes; a job file is at most"),
            std::string::npos);
  const std::string path = dir_ / "huge.yaml";
  std::ofstream(path) << huge;
  try {
    load_job(path);
    ADD_FAILURE() << "accepted a " << huge.size() << "-byte job file";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": " + std::to_string(huge.size()) + " bytes"), std::string::npos)
        << e.what();
  }
  // Deep nesting within the size limit is a parse error, not a stack overflow.
  const std::string deep = "data: " + std::string(100000, '[') + std::string(100000, ']') + "\n";
  EXPECT_NE(error_of(deep).find("job.yaml"), std::string::npos);
  try {
    load_job(dir_ / "missing.yaml");
    ADD_FAILURE();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.yaml: no such file"), std::string::npos) << e.what();
  }
}

// Restores an environment variable on scope exit.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had_) {
      ::setenv(name_, old_.c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

TEST_F(JobConfigTest, ANamedDatasetIsItsLocalCopyOrCacheFolderWithItsFormat) {
  testing::TempDir cache;
  ScopedEnv cache_dir(datasets::kCacheEnv, cache.path());
  // The tests' PARTITA_DATA_DIR holds a copy of cora (test_util.cpp).
  const JobConfig cora = parse("data: {dataset: cora}\n");
  EXPECT_EQ(cora.format, "linqs");
  EXPECT_EQ(cora.dataset, fs::absolute(testing::dataset_path("cora")).lexically_normal().string());
  EXPECT_EQ(parse("data: {dataset: cora, format: linqs}\n").format, "linqs");
  // None here: its cache folder, not downloaded while parsing.
  const JobConfig wn = parse("data: {dataset: wn18rr}\n");
  EXPECT_EQ(wn.dataset, cache / "wn18rr");
  EXPECT_EQ(wn.format, "triples");
  EXPECT_FALSE(fs::exists(cache / "wn18rr"));
  EXPECT_CONTAINS(error_of("data: {dataset: cora, format: npy}\n"),
                  "job.yaml: data.format: npy, but the dataset cora is format linqs");
  EXPECT_CONTAINS(error_of("data: {dataset: pubmed}\n"), "job.yaml: data.dataset: pubmed has no reader yet");
  // A path, however it is spelt, is a path.
  EXPECT_CONTAINS(error_of("data: {dataset: ./cora, format: linqs}\n"), "cora does not exist");
}

TEST_F(JobConfigTest, LoadingAJobDownloadsItsNamedDatasetWhenMissing) {
  testing::TempDir cache;
  testing::LoopbackHttpServer server;
  server.serve("/cora/cora.tgz", {testing::cora_tgz()});
  ScopedEnv no_copies(datasets::kLocalCopiesEnv, "");
  ScopedEnv cache_dir(datasets::kCacheEnv, cache.path());
  ScopedEnv mirror(datasets::kMirrorEnv, server.base_url());
  testing::write_text(dir_ / "cora.yaml", "data: {dataset: cora, num_partitions: 2}\n");
  testing::LogCapture log(spdlog::level::info);
  const JobConfig job = load_job(dir_ / "cora.yaml");
  EXPECT_EQ(job.dataset, cache / "cora");
  EXPECT_TRUE(fs::is_regular_file(cache / "cora/cora.content"));
  EXPECT_CONTAINS(log.text(), "data.dataset cora is not downloaded yet; downloading it into " + (cache / "cora"));
  EXPECT_CONTAINS(log.text(), "cite: P. Sen");
  // Downloaded once.
  load_job(dir_ / "cora.yaml");
  EXPECT_EQ(server.ranges_asked("/cora/cora.tgz").size(), 1u);
  // A failed download names the job file and the dataset.
  server.stop();
  testing::TempDir empty;
  ScopedEnv other_cache(datasets::kCacheEnv, empty.path());
  try {
    load_job(dir_ / "cora.yaml");
    ADD_FAILURE() << "loaded without its dataset";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), (dir_ / "cora.yaml") + ": data.dataset cora: cannot download " + server.base_url());
  }
  EXPECT_FALSE(fs::exists(empty / "cora"));
}

}  // namespace
}  // namespace partita
