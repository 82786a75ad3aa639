// `partita export` and `partita predict` as a user runs them on finished runs (GraphSAGE,
// R-GCN, ComplEx embeddings): the files they write and their shapes, the same predictions
// every time, and every bad input (a missing or foreign folder, a run without checkpoint, a
// kind of job they do not read, a damaged checkpoint, bad --nodes) refused with one line
// naming it, exit 2 for a usage error and 1 for damaged data. That
// the exported model computes in PyG what predict wrote: tests/export/pyg_export_test.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "partitioned_graph.h"
#include "partitioner/npy.h"
#include "partitioner/partition.h"
#include "partitioner/partition_format.h"
#include "test_util.h"

namespace partita {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kNodes = 800;
constexpr int64_t kHidden = 8;

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// One GraphSAGE run on an SBM graph in 2 parts, shared by the tests (training is the slow part).
class ExportCommandTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new testing::TempDir();
    PartitionOptions options;
    options.num_parts = 2;
    partition_dataset(testing::sbm_graph(kNodes, 4), options, *tmp_ / "parts");
    testing::write_text(*tmp_ / "job.yaml",
                        "data: {partitions: parts}\n"
                        "model: {kind: graphsage, hidden: 8, layers: 2}\n"
                        "sampling: {fanouts: [4, 4], batch_size: 16}\n"
                        "train: {epochs: 6, learning_rate: 0.05}\n"
                        "output: run\n");
    const testing::CommandResult r = testing::run_partita({"run", *tmp_ / "job.yaml"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() {
    delete tmp_;
    tmp_ = nullptr;
  }
  static std::string run_dir() { return *tmp_ / "run"; }
  // A copy of the run to damage.
  static std::string copy_of_run(const std::string& name) {
    const std::string copy = *tmp_ / name;
    fs::remove_all(copy);
    fs::copy(run_dir(), copy, fs::copy_options::recursive);
    return copy;
  }
  // The checkpoint the commands read: the selected epoch's (RUN/selected/).
  static std::string checkpoint_file(const std::string& run) {
    const nlohmann::json pointer = nlohmann::json::parse(testing::read_text(run + "/selected/checkpoint.json"));
    return run + "/selected/" + pointer.at("file").get<std::string>();
  }
  static int selected_epoch() {
    return nlohmann::json::parse(testing::read_text(run_dir() + "/report.json")).at("selected_epoch").get<int>();
  }
  static testing::TempDir* tmp_;
};

testing::TempDir* ExportCommandTest::tmp_ = nullptr;

TEST_F(ExportCommandTest, ExportWritesTheStateDictAndItsDescription) {
  const std::string out = *tmp_ / "exported/sage.pt";
  const testing::CommandResult r = testing::run_partita({"export", run_dir(), "--output", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "PyG GraphSAGE's names");
  // torch.save's format: a zip archive (its reading by torch.load: pyg_export_test.py).
  const std::vector<char> bytes = read_bytes(out);
  ASSERT_GE(bytes.size(), 4u);
  EXPECT_EQ(std::string(bytes.data(), 4), std::string("PK\x03\x04", 4));
  const nlohmann::json meta = nlohmann::json::parse(testing::read_text(*tmp_ / "exported/sage.json"));
  EXPECT_EQ(meta.at("pyg_class"), "GraphSAGE");
  EXPECT_EQ(meta.at("names"), "pyg");
  EXPECT_EQ(meta.at("model"), "graphsage");
  EXPECT_EQ(meta.at("in_channels"), 4);  // sbm_graph's features
  EXPECT_EQ(meta.at("hidden_channels"), kHidden);
  EXPECT_EQ(meta.at("num_layers"), 2);
  EXPECT_EQ(meta.at("out_channels"), 4);
  // The epoch of the best validation accuracy, not necessarily the last.
  ASSERT_GE(selected_epoch(), 1);
  EXPECT_EQ(meta.at("epoch"), selected_epoch());
  std::vector<std::string> names;
  for (const auto& t : meta.at("tensors")) names.push_back(t.at("name"));
  EXPECT_EQ(names, (std::vector<std::string>{"convs.0.lin_l.weight", "convs.0.lin_l.bias", "convs.0.lin_r.weight",
                                             "convs.1.lin_l.weight", "convs.1.lin_l.bias", "convs.1.lin_r.weight"}));
  EXPECT_EQ(meta.at("tensors")[3].at("shape"), (std::vector<int64_t>{4, kHidden}));
  // Without --output: beside the run.
  ASSERT_EQ(testing::run_partita({"export", run_dir()}).exit_code, 0);
  EXPECT_TRUE(fs::exists(run_dir() + "/model.pt"));
  EXPECT_TRUE(fs::exists(run_dir() + "/model.json"));
}

TEST_F(ExportCommandTest, PredictWritesEveryNodeDeterministically) {
  testing::CommandResult r = testing::run_partita({"predict", run_dir(), "--output", *tmp_ / "p1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "full-neighbourhood");
  const NpyArray logits = read_npy(*tmp_ / "p1/logits.npy");
  EXPECT_EQ(logits.dtype, DType::kFloat32);
  EXPECT_EQ(logits.shape, (std::vector<int64_t>{kNodes, 4}));
  const NpyArray predictions = read_npy(*tmp_ / "p1/predictions.npy");
  EXPECT_EQ(predictions.dtype, DType::kInt64);
  EXPECT_EQ(predictions.shape, (std::vector<int64_t>{kNodes}));
  EXPECT_EQ(read_npy(*tmp_ / "p1/embeddings.npy").shape, (std::vector<int64_t>{kNodes, kHidden}));
  const NpyArray nodes = read_npy(*tmp_ / "p1/nodes.npy");
  ASSERT_EQ(nodes.shape, (std::vector<int64_t>{kNodes}));
  const auto* ids = reinterpret_cast<const int64_t*>(nodes.data.data());
  for (int64_t i = 0; i < kNodes; ++i) ASSERT_EQ(ids[i], i);
  // Predictions of a trained model, not of random weights: well above chance (a quarter;
  // 320 of 800 is over 5 standard deviations above it).
  const Dataset graph = testing::sbm_graph(kNodes, 4);
  const auto* predicted = reinterpret_cast<const int64_t*>(predictions.data.data());
  int64_t correct = 0;
  for (int64_t i = 0; i < kNodes; ++i) correct += predicted[i] == graph.y[i];
  EXPECT_GT(correct, kNodes * 2 / 5);

  // Full-neighbourhood inference draws nothing: a second run writes the same bytes.
  r = testing::run_partita({"predict", run_dir(), "--output", *tmp_ / "p2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* file : {"logits.npy", "predictions.npy", "embeddings.npy"}) {
    EXPECT_EQ(read_bytes(*tmp_ / "p1/" + file), read_bytes(*tmp_ / "p2/" + file)) << file;
  }
}

TEST_F(ExportCommandTest, BadRunFoldersAreNamed) {
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string expected;
  };
  fs::create_directories(*tmp_ / "not-a-run");
  const std::string no_checkpoint = *tmp_ / "no-checkpoint";
  fs::create_directories(no_checkpoint);
  fs::copy_file(run_dir() + "/job.yaml", no_checkpoint + "/job.yaml", fs::copy_options::overwrite_existing);
  const std::string corrupt = copy_of_run("corrupt");
  std::vector<char> bytes = read_bytes(checkpoint_file(corrupt));
  bytes[bytes.size() / 2] ^= 0x5a;
  write_bytes(checkpoint_file(corrupt), bytes);
  const std::string truncated = copy_of_run("truncated");
  bytes = read_bytes(checkpoint_file(truncated));
  bytes.resize(bytes.size() / 3);
  write_bytes(checkpoint_file(truncated), bytes);
  const std::string missing = copy_of_run("missing");
  fs::remove(checkpoint_file(missing));
  const std::string bad_pointer = copy_of_run("bad-pointer");
  testing::write_text(bad_pointer + "/selected/checkpoint.json", "{\"epoch\": ");

  // Jobs of kinds the commands do not read, refused before anything is loaded.
  const std::string link_gnn = *tmp_ / "link-gnn";
  fs::create_directories(link_gnn);
  testing::write_text(link_gnn + "/job.yaml", "task: link_prediction\ndata: {partitions: " + (*tmp_ / "parts") +
                                                  "}\nmodel: {encoder: graphsage, decoder: dot}\n");
  const std::string on_disk = *tmp_ / "on-disk";
  fs::create_directories(on_disk);
  PartitionOptions one_part;
  one_part.num_parts = 1;  // a table on disk trains on one partition
  partition_dataset(testing::sbm_graph(kNodes, 4), one_part, on_disk + "/parts");
  testing::write_text(on_disk + "/job.yaml", "task: link_prediction\ndata: {partitions: " + on_disk +
                                                 "/parts}\nembeddings: {storage: disk}\n");

  const std::vector<Case> cases = {
      {{"nowhere"}, 2, "does not exist"},
      {{link_gnn}, 2, "with a GNN encoder"},
      {{on_disk}, 2, "on disk"},
      {{*tmp_ / "not-a-run"}, 2, "holds no job.yaml"},
      {{*tmp_ / "job.yaml"}, 2, "is not a folder"},
      {{no_checkpoint}, 2, "holds no checkpoint yet"},
      {{corrupt}, 1, "checksum"},
      {{truncated}, 1, checkpoint_file(truncated)},
      {{missing}, 1, "missing"},
      {{bad_pointer}, 1, "checkpoint.json"},
      {{run_dir(), "--output", *tmp_ / "model.json"}, 2, ".json"},
  };
  for (const Case& c : cases) {
    for (const char* command : {"export", "predict"}) {
      std::vector<std::string> args{command};
      args.insert(args.end(), c.args.begin(), c.args.end());
      if (std::string(command) == "predict" && c.args.size() > 1) continue;  // --output x.json is export's
      const testing::CommandResult r = testing::run_partita(args);
      EXPECT_EQ(r.exit_code, c.exit_code) << command << " " << c.args[0] << ": " << r.err;
      EXPECT_CONTAINS(r.err, c.expected);
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    }
  }
  EXPECT_CONTAINS(testing::run_partita({"export", corrupt}).err, checkpoint_file(corrupt));
}

TEST_F(ExportCommandTest, BadNodeListsAreNamed) {
  const std::string dir = *tmp_ / "node-lists";
  fs::create_directories(dir);
  const std::vector<int64_t> out_of_range = {3, kNodes};
  write_npy(dir + "/range.npy", DType::kInt64, {2}, out_of_range.data());
  const std::vector<int64_t> negative = {-1};
  write_npy(dir + "/negative.npy", DType::kInt64, {1}, negative.data());
  const std::vector<float> floats = {1.0f, 2.0f};
  write_npy(dir + "/float.npy", DType::kFloat32, {2}, floats.data());
  const std::vector<int64_t> matrix = {1, 2, 3, 4};
  write_npy(dir + "/matrix.npy", DType::kInt64, {2, 2}, matrix.data());
  testing::write_text(dir + "/garbage.npy", "not an npy file");
  struct Case {
    std::string file;
    int exit_code;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"range.npy", 2, "entry 1 is node 800, outside the graph's 800 nodes"},
      {"negative.npy", 2, "entry 0 is node -1"},
      {"float.npy", 2, "float32"},
      {"matrix.npy", 2, "1-D"},
      {"garbage.npy", 1, "garbage.npy"},
      {"absent.npy", 1, "absent.npy"},
  };
  for (const Case& c : cases) {
    const testing::CommandResult r =
        testing::run_partita({"predict", run_dir(), "--nodes", dir + "/" + c.file, "--output", dir + "/out"});
    EXPECT_EQ(r.exit_code, c.exit_code) << c.file << ": " << r.err;
    EXPECT_CONTAINS(r.err, c.expected);
  }
  EXPECT_FALSE(fs::exists(dir + "/out/logits.npy")) << "a bad node list must fail before writing";
  // A good one, int32, in any order, repeats allowed.
  const std::vector<int32_t> good = {5, 0, 5};
  write_npy(dir + "/good.npy", DType::kInt32, {3}, good.data());
  const testing::CommandResult r =
      testing::run_partita({"predict", run_dir(), "--nodes", dir + "/good.npy", "--output", dir + "/out"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_npy(dir + "/out/logits.npy").shape, (std::vector<int64_t>{3, 4}));
  const NpyArray nodes = read_npy(dir + "/out/nodes.npy");
  const auto* ids = reinterpret_cast<const int64_t*>(nodes.data.data());
  EXPECT_EQ(std::vector<int64_t>(ids, ids + 3), (std::vector<int64_t>{5, 0, 5}));
}

// R-GCN has no exact PyG equivalent: its tensors keep Partita's names, and the description
// says so; predict classifies every node of every type.
TEST(ExportRelationalTest, RgcnKeepsPartitasNames) {
  testing::TempDir tmp;
  testing::write_text(tmp / "job.yaml",
                      "data: {generate: {kind: hetero, nodes: 400, classes: 4, features: 8, seed: 2}, num_partitions: 2}\n"
                      "model: {kind: rgcn, hidden: 8, layers: 2, target_type: paper, decomposition: basis, bases: 2}\n"
                      "sampling: {fanouts: [4, 4], batch_size: 32}\n"
                      "train: {epochs: 1}\n"
                      "output: run\n");
  testing::CommandResult r = testing::run_partita({"run", tmp / "job.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = testing::run_partita({"export", tmp / "run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "Partita's names");
  const nlohmann::json meta = nlohmann::json::parse(testing::read_text(tmp / "run/model.json"));
  EXPECT_TRUE(meta.at("pyg_class").is_null());
  EXPECT_EQ(meta.at("names"), "partita");
  EXPECT_EQ(meta.at("tensors")[0].at("name"), "conv0.bases");
  r = testing::run_partita({"predict", tmp / "run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const int64_t nodes = read_partition_meta(tmp / "run/partitions").num_nodes;
  EXPECT_EQ(read_npy(tmp / "run/predictions/logits.npy").shape, (std::vector<int64_t>{nodes, 4}));
  EXPECT_EQ(read_npy(tmp / "run/predictions/embeddings.npy").shape, (std::vector<int64_t>{nodes, 8}));
}

// A knowledge-graph embedding run (ComplEx, 2 partitions): export names PyG's ComplEx
// tables; predict writes the entity and relation tables; a damaged shard is named.
TEST(ExportKnowledgeGraphTest, TablesOfEntitiesAndRelations) {
  testing::TempDir tmp;
  fs::create_directories(tmp / "kg");
  std::string train;
  for (int e = 0; e < 30; ++e) {
    train += "e" + std::to_string(e) + "\tr" + std::to_string(e % 3) + "\te" + std::to_string((e * 7 + 3) % 30) + "\n";
    train += "e" + std::to_string(e) + "\tr" + std::to_string((e + 1) % 3) + "\te" + std::to_string((e * 11 + 5) % 30) + "\n";
  }
  testing::write_text(tmp / "kg/train.txt", train);
  testing::write_text(tmp / "kg/valid.txt", "e0\tr0\te3\n");
  testing::write_text(tmp / "kg/test.txt", "e1\tr1\te10\n");
  testing::write_text(tmp / "job.yaml",
                      "task: link_prediction\n"
                      "data: {dataset: kg, format: triples, num_partitions: 2}\n"
                      "model: {decoder: complex, dim: 8}\n"
                      "negatives: {k: 8, chunk_size: 8}\n"
                      "sampling: {batch_size: 16}\n"
                      "train: {epochs: 1}\n"
                      "output: run\n");
  testing::CommandResult r = testing::run_partita({"run", tmp / "job.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = testing::run_partita({"export", tmp / "run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json meta = nlohmann::json::parse(testing::read_text(tmp / "run/model.json"));
  EXPECT_EQ(meta.at("pyg_class"), "ComplEx");
  EXPECT_EQ(meta.at("num_nodes"), 30);
  EXPECT_EQ(meta.at("num_relations"), 3);
  EXPECT_EQ(meta.at("hidden_channels"), 4);  // the real and imaginary halves of dim 8
  r = testing::run_partita({"predict", tmp / "run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_npy(tmp / "run/predictions/entities.npy").shape, (std::vector<int64_t>{30, 8}));
  EXPECT_EQ(read_npy(tmp / "run/predictions/relations.npy").shape, (std::vector<int64_t>{3, 8}));

  // A damaged shard file of the checkpoint predict reads (the selected epoch's, a copy in
  // run/selected): its checksum in that checkpoint.json names it.
  ASSERT_TRUE(fs::exists(tmp / "run/selected/checkpoint.json"));
  const nlohmann::json pointer = nlohmann::json::parse(testing::read_text(tmp / "run/selected/checkpoint.json"));
  const std::string shard = tmp / ("run/selected/" + pointer.at("files")[1].at("file").get<std::string>());
  std::vector<char> bytes = read_bytes(shard);
  bytes.back() ^= 1;
  write_bytes(shard, bytes);
  r = testing::run_partita({"predict", tmp / "run"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.err, shard);
  EXPECT_CONTAINS(r.err, "checksum");
}

}  // namespace
}  // namespace partita
