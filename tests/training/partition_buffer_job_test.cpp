// Knowledge-graph jobs with their entity table on disk behind a partition buffer
// (embeddings: {storage: disk}): with c == p the job is the in-memory job, loss for loss;
// with c < p every training triple is trained once per epoch, in its bucket's buffer
// state, the budget holds and the table on disk is readable at the end; bad fields are
// named.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "base/error.h"
#include "base/random.h"
#include "job_runs.h"
#include "partitioner/partition_format.h"
#include "test_util.h"
#include "training/bucket_epoch.h"
#include "training/job_config.h"
#include "training/kg_triples.h"

namespace partita {
namespace {

namespace fs = std::filesystem;
using testing::run_in_process;

class BufferJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // 60 entities, 3 relations, 300 distinct triples; every entity in the training set.
    std::set<std::tuple<int, int, int>> seen;
    Rng rng(11);
    fs::create_directories(tmp_ / "kg");
    std::ofstream out(tmp_ / "kg/train.txt");
    std::vector<std::tuple<int, int, int>> triples;
    for (int e = 0; e < 60; ++e) triples.emplace_back(e, e % 3, (e * 7 + 1) % 60);
    seen.insert(triples.begin(), triples.end());
    while (triples.size() < 300) {
      std::tuple<int, int, int> t(static_cast<int>(rng.below(60)), static_cast<int>(rng.below(3)), static_cast<int>(rng.below(60)));
      if (std::get<0>(t) != std::get<2>(t) && seen.insert(t).second) triples.push_back(t);
    }
    for (const auto& [h, r, t] : triples) out << "e" << h << "\tr" << r << "\te" << t << "\n";
    out.close();
    std::ofstream valid(tmp_ / "kg/valid.txt"), test(tmp_ / "kg/test.txt");
    for (size_t i = 0; i < 30; ++i) {
      const auto& [h, r, t] = triples[i];
      (i < 10 ? valid : test) << "e" << h << "\tr" << r << "\te" << t << "\n";
    }
  }
  JobConfig job(const std::string& embeddings, const std::string& output, int parts = 1) {
    return parse_job("task: link_prediction\n"
                     "data: {dataset: kg, format: triples, num_partitions: " + std::to_string(parts) + "}\n"
                     "model: {encoder: none, decoder: distmult, dim: 8, init_std: 0.1}\n"
                     "negatives: {k: 10, chunk_size: 8, degree_fraction: 0.5}\n"
                     "sampling: {batch_size: 32}\n"
                     "train: {epochs: 2, learning_rate: 0.2, seed: 5}\n" +
                         (embeddings.empty() ? std::string() : "embeddings: " + embeddings + "\n") +
                         "output: " + output + "\n",
                     tmp_.path(), "buffer job");
  }
  testing::TempDir tmp_;
};

TEST_F(BufferJobTest, ABufferOfEveryPartitionIsTheInMemoryJobLossForLoss) {
  const JobReport memory = run_in_process(job("", "memory"));
  const JobReport disk = run_in_process(job("{storage: disk, partitions: 3, buffer: 3}", "disk"));
  ASSERT_EQ(memory.epochs.size(), disk.epochs.size());
  for (size_t e = 0; e < memory.epochs.size(); ++e) {
    ASSERT_EQ(memory.epochs[e].step_losses.size(), disk.epochs[e].step_losses.size());
    for (size_t s = 0; s < memory.epochs[e].step_losses.size(); ++s) {
      // The same triples, negatives and float operations: equal, not near.
      EXPECT_EQ(memory.epochs[e].step_losses[s], disk.epochs[e].step_losses[s]) << "epoch " << e + 1 << " step " << s;
    }
    EXPECT_EQ(memory.epochs[e].ranking_metric("test.mrr"), disk.epochs[e].ranking_metric("test.mrr"));
    EXPECT_EQ(memory.epochs[e].ranking_metric("valid.raw_mrr"), disk.epochs[e].ranking_metric("valid.raw_mrr"));
  }
  EXPECT_EQ(memory.parameter_hash == 0, false);
}

TEST_F(BufferJobTest, EveryTripleIsTrainedOnceAnEpochInAStateHoldingBothEnds) {
  JobConfig j = job("{storage: disk, partitions: 4, buffer: 2}", "disk");
  const JobReport report = run_in_process(j);
  const PartitionFolder folder(j.partition_dir());
  const KgTriples triples(folder);
  const std::vector<int64_t> ids = table_ids(triples, j.seed);
  EmbeddingPartitions::Shape shape;
  shape.num_entities = triples.num_entities();
  shape.num_partitions = 4;
  shape.dim = 8;
  for (uint64_t epoch = 1; epoch <= 2; ++epoch) {
    const BucketEpoch plan = plan_bucket_epoch(triples, ids, shape, 2, j.seed, epoch, j.batch_size);
    EXPECT_EQ(plan.order.swaps(), 5);
    EXPECT_EQ(static_cast<int64_t>(report.epochs[epoch - 1].step_losses.size()), plan.steps);
    std::vector<int> trained(static_cast<size_t>(triples.train().size()), 0);
    for (size_t k = 0; k < plan.edges.size(); ++k) {
      const std::vector<int>& state = plan.order.states[k];
      for (int64_t e : plan.edges[k]) {
        ++trained[static_cast<size_t>(e)];
        for (int64_t end : {triples.train().head[e], triples.train().tail[e]}) {
          const int part = shape.partition_of(ids[static_cast<size_t>(end)]);
          ASSERT_NE(std::find(state.begin(), state.end(), part), state.end()) << "edge " << e << " in state " << k;
        }
      }
      // The negatives are resident too.
      std::vector<int64_t> edges = plan.edges[k];
      std::sort(edges.begin(), edges.end());
      const std::vector<int64_t> negatives =
          draw_buffer_negatives(triples, KgNegatives{10, 8, 0.5, false}, plan, k, edges, ids, shape, j.seed, epoch, 0, 0);
      for (int64_t n : negatives) {
        const int part = shape.partition_of(ids[static_cast<size_t>(n)]);
        ASSERT_NE(std::find(state.begin(), state.end(), part), state.end()) << "negative " << n << " in state " << k;
      }
    }
    EXPECT_EQ(std::count(trained.begin(), trained.end(), 1), triples.train().size()) << "epoch " << epoch;
  }
  // Trained, and the table on disk is whole (every checksum holds).
  EXPECT_LT(report.epochs.back().train_loss, report.epochs.front().train_loss);
  EXPECT_GT(report.epochs.back().ranking_metric("test.mrr"), 0.0);
  const EmbeddingPartitions table = EmbeddingPartitions::open(j.output + "/embeddings", shape);
  for (int i = 0; i < 4; ++i) {
    std::vector<float> payload(table.payload_bytes(i) / sizeof(float));
    EXPECT_NO_THROW(table.read(i, Span<float>(payload)));
  }
}

// The table's rows are the entities in a seeded order (every entity one row), and a
// triple whose ends are resident together in several states goes to one of them drawn per
// triple: buckets are split between the states that hold them.
TEST_F(BufferJobTest, RowsAreShuffledAndTriplesSpreadOverTheStatesThatHoldThem) {
  const JobConfig j = job("{storage: disk, partitions: 4, buffer: 3}", "disk");
  run_in_process(j);  // partitions the data
  const PartitionFolder folder(j.partition_dir());
  const KgTriples triples(folder);
  const std::vector<int64_t> ids = table_ids(triples, j.seed);
  std::vector<int64_t> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], static_cast<int64_t>(i));
  EXPECT_NE(ids, table_ids(triples, j.seed + 1));
  const std::vector<int64_t> originals = original_ids_of_rows(triples, ids);
  for (int64_t o = 0; o < triples.num_entities(); ++o) {
    ASSERT_EQ(originals[static_cast<size_t>(ids[static_cast<size_t>(triples.global_of_original(o))])], o);
  }
  EmbeddingPartitions::Shape shape;
  shape.num_entities = triples.num_entities();
  shape.num_partitions = 4;
  shape.dim = 8;
  const TripleList& train = triples.train();
  for (uint64_t epoch = 1; epoch <= 2; ++epoch) {
    const BucketEpoch plan = plan_bucket_epoch(triples, ids, shape, 3, j.seed, epoch, j.batch_size);
    ASSERT_GT(plan.order.states.size(), 1u);
    // bucket -> the states its triples went to
    std::map<std::pair<int, int>, std::set<size_t>> states_of_bucket;
    for (size_t k = 0; k < plan.edges.size(); ++k) {
      for (int64_t e : plan.edges[k]) {
        const int a = shape.partition_of(ids[static_cast<size_t>(train.head[e])]);
        const int b = shape.partition_of(ids[static_cast<size_t>(train.tail[e])]);
        states_of_bucket[{a, b}].insert(k);
      }
    }
    size_t split = 0;
    for (const auto& entry : states_of_bucket) split += entry.second.size() > 1 ? 1 : 0;
    EXPECT_GT(split, 0u) << "epoch " << epoch;
  }
}

TEST_F(BufferJobTest, BadFieldsAreNamed) {
  auto message = [&](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { job("{storage: disk, partitions: 4, buffer: 1}", "x"); }).find("embeddings.buffer: must be at least 2"),
            std::string::npos);
  EXPECT_NE(message([&] { job("{storage: disk, partitions: 4, buffer: 5}", "x"); })
                .find("embeddings.buffer: 5 is more than the 4 partitions"),
            std::string::npos);
  EXPECT_NE(message([&] { job("{storage: disk, partitions: 0, buffer: 2}", "x"); }).find("embeddings.partitions: must be at least 1"),
            std::string::npos);
  EXPECT_NE(message([&] { job("{storage: memory, buffer: 2}", "x"); }).find("applies to storage: disk only"),
            std::string::npos);
  EXPECT_NE(message([&] { job("{storage: disk, partitions: 4, buffer: 2}", "x", 2); }).find("data.num_partitions: 1"),
            std::string::npos);
  // More partitions than entities, and a folder that cannot be created: named when the job starts.
  std::string what = message([&] { run_in_process(job("{storage: disk, partitions: 61, buffer: 2}", "many")); });
  EXPECT_NE(what.find("embeddings.partitions: 61 partitions for 60 entities"), std::string::npos) << what;
  testing::write_text(tmp_ / "a-file", "x");
  what = message([&] {
    run_in_process(job("{storage: disk, partitions: 4, buffer: 2, dir: a-file/embeddings}", "blocked"));
  });
  EXPECT_NE(what.find("cannot create the folder " + (tmp_ / "a-file/embeddings")), std::string::npos) << what;
  // The job the driver sends its trainers carries the fields.
  const std::string yaml = job_to_yaml(job("{storage: disk, partitions: 4, buffer: 3, prefetch: false}", "y"));
  for (const char* field : {"storage: disk", "partitions: 4", "buffer: 3", "prefetch: false"}) {
    EXPECT_NE(yaml.find(field), std::string::npos) << field << " in\n" << yaml;
  }
}

TEST(BufferExampleTest, TheFb15k237BufferExampleLoads) {
  const JobConfig j = load_job(std::string(PARTITA_TEST_CORPUS) + "/../../examples/fb15k237_buffer.yaml");
  EXPECT_TRUE(j.link.on_disk());
  EXPECT_EQ(j.link.embedding_partitions, 8);
  EXPECT_EQ(j.link.embedding_buffer, 4);
  EXPECT_EQ(j.num_partitions, 1);
  EXPECT_EQ(fs::path(j.dataset).filename(), "fb15k-237");
}

}  // namespace
}  // namespace partita
