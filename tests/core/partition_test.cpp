// Partitioning and the on-disk format: invariants, determinism, atomic writes.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <thread>

#include "base/error.h"
#include "base/subprocess.h"
#include "partitioner/generators.h"
#include "partitioner/meta_json.h"
#include "partitioner/partition.h"
#include "partitioner/partition_format.h"
#include "partitioner/readers.h"
#include "test_paths.h"
#include "test_util.h"

namespace partita {
namespace {

using testing::kPartitaBinary;

namespace fs = std::filesystem;
using testing::TempDir;

Dataset small_sbm(uint64_t seed = 3) {
  SbmOptions o;
  o.num_nodes = 3000;
  o.num_classes = 4;
  o.feature_dim = 8;
  o.avg_degree = 8;
  o.seed = seed;
  return generate_sbm(o);
}

PartitionMeta partition_to(const Dataset& d, const std::string& dir, int parts,
                           PartitionMethod method = PartitionMethod::kMetis, uint64_t seed = 0) {
  PartitionOptions options;
  options.num_parts = parts;
  options.method = method;
  options.seed = seed;
  return write_partitions(d, assign_partitions(d, options), options, dir);
}

// Everything a user relies on after partitioning, checked against the in-memory dataset:
// each node in exactly one part with its own features and label, each edge exactly once
// (as original ids), columns in original-edge-id order, splits and halos preserved.
void expect_faithful(const Dataset& d, const std::string& dir) {
  PartitionFolder folder(dir);
  const PartitionMeta& meta = folder.meta();
  ASSERT_EQ(meta.num_nodes, d.num_nodes);
  ASSERT_EQ(meta.num_edges, d.num_edges());
  ASSERT_NO_THROW(folder.verify_all(Verify::kFull));

  MappedArray node_map = folder.node_map();
  auto to_global = node_map.as<int64_t>();
  std::vector<int64_t> to_orig(d.num_nodes, -1);
  std::vector<int> seen_edges(d.num_edges(), 0);
  std::set<int64_t> train, val, test;
  for (int p = 0; p < meta.num_parts; ++p) {
    PartitionData part = folder.load_part(p, Verify::kFull);
    EXPECT_EQ(part.node_begin, meta.partition_book[p]);
    auto orig = part.orig_ids.as<int64_t>();
    auto indptr = part.indptr.as<int64_t>();
    auto indices = part.indices.as<int64_t>();
    auto edge_ids = part.edge_ids.as<int64_t>();
    for (int64_t i = 0; i < part.num_nodes(); ++i) {
      int64_t v = orig[i];
      ASSERT_EQ(to_orig[part.node_begin + i], -1);
      to_orig[part.node_begin + i] = v;
      EXPECT_EQ(to_global[v], part.node_begin + i);
      if (part.y) {
        EXPECT_EQ(part.y->as<int64_t>()[i], d.y[v]);
      }
      if (part.x) {
        auto x = part.x->as<float>();
        for (int64_t f = 0; f < d.feature_dim; ++f) {
          ASSERT_EQ(x[i * d.feature_dim + f], d.x[v * d.feature_dim + f]);
        }
      }
      for (int64_t k = indptr[i]; k < indptr[i + 1]; ++k) {
        int64_t e = edge_ids[k];
        if (k > indptr[i]) {
          EXPECT_LT(edge_ids[k - 1], e) << "column not in original edge order";
        }
        ++seen_edges[e];
        EXPECT_EQ(d.edges.dst[e], v);
        EXPECT_EQ(to_global[d.edges.src[e]], indices[k]);
      }
    }
    for (int64_t g : part.train_idx.as<int64_t>()) train.insert(g);
    for (int64_t g : part.val_idx.as<int64_t>()) val.insert(g);
    for (int64_t g : part.test_idx.as<int64_t>()) test.insert(g);
  }
  for (int64_t e = 0; e < d.num_edges(); ++e) ASSERT_EQ(seen_edges[e], 1) << "edge " << e;
  auto expect_split = [&](const std::vector<int64_t>& original, const std::set<int64_t>& stored) {
    std::set<int64_t> mapped;
    for (int64_t v : original) mapped.insert(to_global[v]);
    EXPECT_EQ(mapped, stored);
  };
  expect_split(d.train_idx, train);
  expect_split(d.val_idx, val);
  expect_split(d.test_idx, test);
}

TEST(PartitionTest, CoraPartitionsAreFaithfulForOneTwoAndFourParts) {
  Dataset cora = read_linqs(testing::dataset_path("cora"));
  TempDir tmp;
  for (int parts : {1, 2, 4}) {
    SCOPED_TRACE(parts);
    std::string dir = tmp / ("cora" + std::to_string(parts));
    PartitionMeta meta = partition_to(cora, dir, parts);
    EXPECT_EQ(meta.num_parts, parts);
    expect_faithful(cora, dir);
  }
}

// A feature that is not finite passes its checksum (it was written so); the full check
// names it, and `inspect --verify` fails on it before a job reads it.
TEST(PartitionTest, FullVerificationNamesFeaturesThatAreNotFinite) {
  TempDir tmp;
  Dataset d = small_sbm();
  d.x[1234 * d.feature_dim + 5] = std::numeric_limits<float>::quiet_NaN();
  d.x[2000 * d.feature_dim] = std::numeric_limits<float>::infinity();
  partition_to(d, tmp / "p", 2);
  PartitionFolder folder(tmp / "p");
  EXPECT_NO_THROW(folder.verify_all(Verify::kStructure));
  try {
    folder.verify_all(Verify::kFull);
    ADD_FAILURE() << "a NaN feature passed the full check";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x.bin"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not finite"), std::string::npos) << e.what();
  }
  const auto inspect = testing::run_partita({"--log-level", "warn", "inspect", tmp / "p", "--verify"});
  EXPECT_NE(inspect.exit_code, 0);
  EXPECT_NE(inspect.err.find("not finite"), std::string::npos) << inspect.err;
}

TEST(PartitionTest, RandomMethodIsFaithfulAndBalanced) {
  Dataset d = small_sbm();
  TempDir tmp;
  PartitionMeta meta = partition_to(d, tmp / "random", 3, PartitionMethod::kRandom, 5);
  expect_faithful(d, tmp / "random");
  for (const auto& p : meta.parts) EXPECT_EQ(p.num_nodes, 1000);
}

TEST(PartitionTest, MetisCutsFarFewerEdgesThanRandom) {
  Dataset d = small_sbm();
  TempDir tmp;
  PartitionMeta metis = partition_to(d, tmp / "m", 4, PartitionMethod::kMetis);
  PartitionMeta random = partition_to(d, tmp / "r", 4, PartitionMethod::kRandom);
  EXPECT_LT(metis.total_cut_edges() * 2, random.total_cut_edges());
}

TEST(PartitionTest, TrainingNodesAreBalancedAcrossParts) {
  // Training nodes concentrated in one region of the graph: a plain node-count balance
  // would give one part nearly all of them.
  Dataset d = small_sbm();
  d.train_idx.clear();
  for (int64_t v = 0; v < d.num_nodes; ++v) {
    if (d.y[v] == 0) d.train_idx.push_back(v);
  }
  d.val_idx.clear();
  d.test_idx.clear();
  TempDir tmp;
  PartitionMeta meta = partition_to(d, tmp / "p", 2);
  double total = static_cast<double>(d.train_idx.size());
  for (const auto& p : meta.parts) {
    EXPECT_NEAR(static_cast<double>(p.num_train) / total, 0.5, 0.05);
  }
}

TEST(PartitionTest, HeteroNodeTypesAreBalancedAndStored) {
  HeteroOptions o;
  o.num_papers = 3000;
  o.num_authors = 1500;
  o.num_venues = 20;
  o.feature_dim = 4;
  Dataset d = generate_hetero(o);
  d.node_type_feature_dim = {4, 2, 0};  // papers use every column, authors 2, venues none
  TempDir tmp;
  PartitionMeta meta = partition_to(d, tmp / "h", 2);
  EXPECT_TRUE(meta.is_hetero);
  EXPECT_EQ(meta.node_types, d.node_type_names);
  EXPECT_EQ(parse_meta_json(tmp / "h/META.json").node_type_feature_dim, (std::vector<int64_t>{4, 2, 0}));
  EXPECT_EQ(meta.edge_types.size(), d.edge_types.size());
  expect_faithful(d, tmp / "h");
  PartitionFolder folder(tmp / "h");
  std::map<int32_t, std::vector<int64_t>> per_type;  // type -> count per part
  for (int p = 0; p < 2; ++p) {
    PartitionData part = folder.load_part(p);
    ASSERT_TRUE(part.node_type && part.edge_type);
    auto types = part.node_type->as<int32_t>();
    auto orig = part.orig_ids.as<int64_t>();
    for (int64_t i = 0; i < part.num_nodes(); ++i) {
      ASSERT_EQ(types[i], d.node_type[orig[i]]);
      per_type[types[i]].resize(2);
      ++per_type[types[i]][p];
    }
    auto edge_types = part.edge_type->as<int32_t>();
    auto edge_ids = part.edge_ids.as<int64_t>();
    for (size_t k = 0; k < edge_ids.size(); ++k) ASSERT_EQ(edge_types[k], d.edges.type[edge_ids[k]]);
  }
  for (const auto& [type, counts] : per_type) {
    double share = static_cast<double>(counts[0]) / static_cast<double>(counts[0] + counts[1]);
    EXPECT_NEAR(share, 0.5, 0.06) << "node type " << d.node_type_names[type];
  }
}

TEST(PartitionTest, KnowledgeGraphKeepsRelationsAndHeldOutTriples) {
  Dataset kg = read_triples(testing::dataset_path("fb15k-237"));
  TempDir tmp;
  PartitionMeta meta = partition_to(kg, tmp / "kg", 2);
  ASSERT_TRUE(meta.has_edge_splits);
  int64_t val = 0, test = 0;
  PartitionFolder folder(tmp / "kg");
  MappedArray map = folder.node_map();
  auto to_global = map.as<int64_t>();
  std::multiset<std::tuple<int64_t, int32_t, int64_t>> expected, stored;
  for (int64_t i = 0; i < kg.test_edges.size(); ++i) {
    expected.insert({to_global[kg.test_edges.src[i]], kg.test_edges.type[i], to_global[kg.test_edges.dst[i]]});
  }
  for (int p = 0; p < 2; ++p) {
    PartitionData part = folder.load_part(p);
    val += part.val_edge_index->dim(1);
    test += part.test_edge_index->dim(1);
    auto index = part.test_edge_index->as<int64_t>();
    auto types = part.test_edge_type->as<int32_t>();
    int64_t k = part.test_edge_index->dim(1);
    for (int64_t i = 0; i < k; ++i) {
      EXPECT_GE(index[k + i], part.node_begin);
      EXPECT_LT(index[k + i], part.node_end);
      stored.insert({index[i], types[i], index[k + i]});
    }
  }
  EXPECT_EQ(val, 17535);
  EXPECT_EQ(test, 20466);
  EXPECT_EQ(expected, stored);
}

std::map<std::string, std::string> folder_contents(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) {
      files[fs::relative(entry.path(), dir).string()] = testing::read_text(entry.path().string());
    }
  }
  return files;
}

TEST(PartitionTest, SameInputAndSeedGiveIdenticalFolders) {
  Dataset d = small_sbm();
  TempDir tmp;
  partition_to(d, tmp / "a", 3, PartitionMethod::kMetis, 7);
  partition_to(d, tmp / "b", 3, PartitionMethod::kMetis, 7);
  partition_to(d, tmp / "c", 3, PartitionMethod::kRandom, 7);
  partition_to(d, tmp / "d", 3, PartitionMethod::kRandom, 7);
  EXPECT_EQ(folder_contents(tmp / "a"), folder_contents(tmp / "b"));
  EXPECT_EQ(folder_contents(tmp / "c"), folder_contents(tmp / "d"));
  partition_to(d, tmp / "e", 3, PartitionMethod::kRandom, 8);
  EXPECT_NE(folder_contents(tmp / "c"), folder_contents(tmp / "e"));
}

TEST(PartitionTest, InEdgeIndexIsStableWhateverTheThreads) {
  Dataset d = small_sbm();
  InEdges one = build_in_edges(d, 1);
  for (int64_t v = 0; v < d.num_nodes; ++v) {
    for (int64_t k = one.indptr[v]; k < one.indptr[v + 1]; ++k) {
      ASSERT_EQ(d.edges.dst[one.edge_ids[k]], v);
      ASSERT_EQ(d.edges.src[one.edge_ids[k]], one.src[k]);
      if (k > one.indptr[v]) {
        ASSERT_LT(one.edge_ids[k - 1], one.edge_ids[k]);
      }
    }
  }
  for (int threads : {2, 3, 8}) {
    InEdges many = build_in_edges(d, threads);
    EXPECT_EQ(many.indptr, one.indptr);
    EXPECT_EQ(many.src, one.src);
    EXPECT_EQ(many.edge_ids, one.edge_ids);
  }
}

TEST(PartitionTest, ThreadCountDoesNotChangeTheFolder) {
  Dataset d = small_sbm();
  TempDir tmp;
  for (int threads : {1, 2, 3}) {
    PartitionOptions options;
    options.num_parts = 3;
    options.threads = threads;
    WriteOptions write;
    write.threads = threads;
    partition_dataset(d, options, tmp / ("t" + std::to_string(threads)), write);
  }
  EXPECT_EQ(folder_contents(tmp / "t1"), folder_contents(tmp / "t2"));
  EXPECT_EQ(folder_contents(tmp / "t1"), folder_contents(tmp / "t3"));
}

TEST(PartitionTest, PartitionBookFindsEveryOwner) {
  Dataset d = small_sbm();
  TempDir tmp;
  partition_to(d, tmp / "p", 4);
  PartitionFolder folder(tmp / "p");
  for (int p = 0; p < 4; ++p) {
    for (int64_t g = folder.book().begin(p); g < folder.book().end(p); ++g) {
      ASSERT_EQ(folder.book().owner(g), p);
    }
  }
}

TEST(PartitionTest, MorePartsThanNodesIsAnError) {
  Dataset d;
  d.name = "tiny";
  d.num_nodes = 3;
  d.edges.push_back(0, 1);
  PartitionOptions options;
  options.num_parts = 4;
  EXPECT_THROW(assign_partitions(d, options), Error);
}

TEST(PartitionTest, ExistingOutputIsKeptUnlessOverwriteIsGiven) {
  Dataset d = small_sbm();
  TempDir tmp;
  std::string dir = tmp / "out";
  fs::create_directory(dir);
  testing::write_text(dir + "/keep.txt", "mine");
  testing::write_text(dir + "/META.json", "{}");  // an earlier partition run's folder
  PartitionOptions options;
  auto parts = assign_partitions(d, options);
  EXPECT_THROW(write_partitions(d, parts, options, dir), Error);
  EXPECT_EQ(testing::read_text(dir + "/keep.txt"), "mine");
  WriteOptions overwrite;
  overwrite.overwrite = true;
  write_partitions(d, parts, options, dir, overwrite);
  EXPECT_FALSE(fs::exists(dir + "/keep.txt"));
  EXPECT_NO_THROW(PartitionFolder{dir}.verify_all());
}

TEST(PartitionTest, KilledPartitionCommandLeavesNoOutputFolder) {
  TempDir tmp;
  RmatOptions o;
  o.num_nodes = 200000;
  o.avg_degree = 20;
  o.feature_dim = 64;
  write_npy_folder(generate_rmat(o), tmp / "rmat");
  std::vector<std::string> argv{kPartitaBinary, "--log-level", "warn", "partition", "--input",
                                tmp / "rmat", "--output", tmp / "out", "--method", "random"};
  {
    // Kill the writer while it is writing: as soon as its staging folder holds a part.
    ChildProcess child(argv);
    std::string staging = tmp / ("out.partita-tmp-" + std::to_string(child.pid()));
    bool writing = false;
    for (int i = 0; i < 6000 && child.running() && !writing; ++i) {
      writing = fs::exists(staging + "/part0");
      if (!writing) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (!writing) GTEST_SKIP() << "the command finished before it could be interrupted";
    child.kill();
    child.wait(10);
  }
  EXPECT_FALSE(fs::exists(tmp / "out")) << "an interrupted run left an output folder";
  ProcessResult finished = run_process(argv, 120);
  ASSERT_EQ(finished.exit_code, 0) << finished.err;
  EXPECT_NO_THROW(PartitionFolder{tmp / "out"}.verify_all());
  for (const auto& entry : fs::directory_iterator(tmp.path())) {
    EXPECT_EQ(entry.path().filename().string().find(".partita-tmp-"), std::string::npos)
        << "the killed run's staging folder was not cleaned up";
  }
}

TEST(PartitionTest, AsManyPartsAsNodesAndGraphsWithoutEdges) {
  TempDir tmp;
  Dataset ring;
  ring.name = "ring";
  ring.num_nodes = 4;
  for (int v = 0; v < 4; ++v) ring.edges.push_back(v, (v + 1) % 4);
  partition_to(ring, tmp / "ring", 4);
  expect_faithful(ring, tmp / "ring");
  Dataset loops;
  loops.name = "loops";
  loops.num_nodes = 6;
  loops.edges.push_back(0, 0);
  loops.edges.push_back(5, 5);
  partition_to(loops, tmp / "loops", 3);
  expect_faithful(loops, tmp / "loops");
}

TEST(PartitionTest, OutputInsideAFileIsNamed) {
  Dataset d = small_sbm();
  TempDir tmp;
  testing::write_text(tmp / "file", "x");
  PartitionOptions options;
  try {
    write_partitions(d, assign_partitions(d, options), options, tmp / "file/out");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("file/out"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
}

TEST(PartitionTest, UnwritableOutputFolderIsNamed) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores folder permissions";
  Dataset d = small_sbm();
  TempDir tmp;
  fs::create_directory(tmp / "ro");
  fs::permissions(tmp / "ro", fs::perms::owner_read | fs::perms::owner_exec);
  PartitionOptions options;
  try {
    write_partitions(d, assign_partitions(d, options), options, tmp / "ro/out");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not writable"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace partita
