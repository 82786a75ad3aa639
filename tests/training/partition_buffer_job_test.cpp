// Knowledge-graph jobs with their entity table on disk behind a partition buffer
// (embeddings: {storage: disk}): with c == p the job is the in-memory job, loss for loss;
// with c < p every training triple is trained once per epoch, in its bucket's buffer
// state, against resident negatives, logical partitions are regrouped every epoch, the budget holds and the table on disk is readable at the end; bad fields are
// named.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "base/error.h"
#include "base/random.h"
#include "embeddings/bucket_epoch.h"
#include "embeddings/kg_triples.h"
#include "embeddings/partition_buffer.h"
#include "job_runs.h"
#include "partitioner/partition_format.h"
#include "test_paths.h"
#include "test_util.h"
#include "training/job_config.h"

namespace partita {
namespace {

namespace fs = std::filesystem;
using testing::expect_identical_training;
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
  // 4 physical partitions of 4 logical ones each (15 entities per physical partition).
  const EmbeddingPartitions::Shape shape = buffer_table_shape(triples.num_entities(), 4, 8);
  ASSERT_EQ(shape.num_partitions, 16);
  for (uint64_t epoch = 1; epoch <= 2; ++epoch) {
    const BucketEpoch plan = plan_bucket_epoch(triples, ids, shape, 4, 2, j.seed, epoch, j.batch_size);
    EXPECT_EQ(plan.order.swaps(), 5);
    EXPECT_EQ(static_cast<int64_t>(report.epochs[epoch - 1].step_losses.size()), plan.steps);
    std::vector<int> trained(static_cast<size_t>(triples.train().size()), 0);
    for (size_t k = 0; k < plan.edges.size(); ++k) {
      const std::vector<int>& state = plan.resident[k];
      ASSERT_EQ(state.size(), 8u) << "2 physical partitions of 4 logical ones";
      for (int64_t e : plan.edges[k]) {
        ++trained[static_cast<size_t>(e)];
        for (int64_t end : {triples.train().head[e], triples.train().tail[e]}) {
          const int part = shape.partition_of(ids[static_cast<size_t>(end)]);
          ASSERT_NE(std::find(state.begin(), state.end(), part), state.end()) << "edge " << e << " in state " << k;
        }
      }
      // The negatives are resident too, whichever step and chunk draws them, and they come
      // from every resident partition, not only the ends' ones.
      std::vector<int64_t> edges = plan.edges[k];
      std::sort(edges.begin(), edges.end());
      std::set<int> negative_parts;
      for (uint64_t step = 0; step < 4; ++step) {
        for (uint64_t chunk = 0; chunk < 4; ++chunk) {
          const std::vector<int64_t> negatives = draw_buffer_negatives(triples, KgNegatives{40, 8, 0.5, false}, plan, k,
                                                                       edges, ids, shape, j.seed, epoch, step, chunk);
          for (int64_t n : negatives) {
            const int part = shape.partition_of(ids[static_cast<size_t>(n)]);
            ASSERT_NE(std::find(state.begin(), state.end(), part), state.end()) << "negative " << n << " in state " << k;
            negative_parts.insert(part);
          }
        }
      }
      EXPECT_EQ(negative_parts.size(), state.size()) << "state " << k;
    }
    EXPECT_EQ(std::count(trained.begin(), trained.end(), 1), triples.train().size()) << "epoch " << epoch;
  }
  // Trained, and the table on disk is whole (every checksum holds).
  EXPECT_LT(report.epochs.back().train_loss, report.epochs.front().train_loss);
  EXPECT_GT(report.epochs.back().ranking_metric("test.mrr"), 0.0);
  const EmbeddingPartitions table = EmbeddingPartitions::open(j.output + "/embeddings", shape);
  for (int i = 0; i < shape.num_partitions; ++i) {
    std::vector<float> payload(table.payload_bytes(i) / sizeof(float));
    EXPECT_NO_THROW(table.read(i, Span<float>(payload)));
  }
}

// Prefetching reads every logical partition of a swap in the background (one physical
// partition); the job it trains is the job without prefetching, loss for loss: the same
// steps, the same weights (relations and every table row), the same ranking.
TEST_F(BufferJobTest, PrefetchingEveryFileOfASwapTrainsTheJobWithoutPrefetching) {
  const JobConfig with = job("{storage: disk, partitions: 4, buffer: 2}", "prefetch");
  const JobConfig without = job("{storage: disk, partitions: 4, buffer: 2, prefetch: false}", "no-prefetch");
  const PartitionBuffer::Stats before = PartitionBuffer::process_totals();
  const JobReport a = run_in_process(with);
  const PartitionBuffer::Stats middle = PartitionBuffer::process_totals();
  const JobReport b = run_in_process(without);
  const PartitionBuffer::Stats after = PartitionBuffer::process_totals();
  // 2 epochs of 5 swaps, each 4 logical partitions, all prefetched; none without.
  EXPECT_EQ(middle.swaps - before.swaps, 10);
  EXPECT_EQ(middle.prefetched - before.prefetched, 40);
  EXPECT_EQ(after.swaps - middle.swaps, 10);
  EXPECT_EQ(after.prefetched - middle.prefetched, 0);
  expect_identical_training(a, b);
  const PartitionFolder folder(with.partition_dir());
  const EmbeddingPartitions::Shape shape = buffer_table_shape(KgTriples(folder).num_entities(), 4, 8);
  const EmbeddingPartitions ta = EmbeddingPartitions::open(with.output + "/embeddings", shape);
  const EmbeddingPartitions tb = EmbeddingPartitions::open(without.output + "/embeddings", shape);
  for (int i = 0; i < shape.num_partitions; ++i) {
    std::vector<float> pa(ta.payload_bytes(i) / sizeof(float)), pb(pa.size());
    ta.read(i, Span<float>(pa));
    tb.read(i, Span<float>(pb));
    EXPECT_EQ(pa, pb) << "partition " << i;
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
  const EmbeddingPartitions::Shape shape = buffer_table_shape(triples.num_entities(), 4, 8);
  const TripleList& train = triples.train();
  for (uint64_t epoch = 1; epoch <= 2; ++epoch) {
    const BucketEpoch plan = plan_bucket_epoch(triples, ids, shape, 4, 3, j.seed, epoch, j.batch_size);
    ASSERT_GT(plan.order.states.size(), 1u);
    // physical bucket -> the states its triples went to
    std::map<std::pair<int, int>, std::set<size_t>> states_of_bucket;
    for (size_t k = 0; k < plan.edges.size(); ++k) {
      for (int64_t e : plan.edges[k]) {
        const int a = plan.group_of[static_cast<size_t>(shape.partition_of(ids[static_cast<size_t>(train.head[e])]))];
        const int b = plan.group_of[static_cast<size_t>(shape.partition_of(ids[static_cast<size_t>(train.tail[e])]))];
        states_of_bucket[{a, b}].insert(k);
      }
    }
    size_t split = 0;
    for (const auto& entry : states_of_bucket) split += entry.second.size() > 1 ? 1 : 0;
    EXPECT_GT(split, 0u) << "epoch " << epoch;
  }
}

// Each epoch groups the logical partitions into physical ones anew: a grouping is a
// partition of the logical ones into p groups of l / p, the same for the same (seed,
// epoch), another for another epoch or seed; each state holds exactly the logical
// partitions of its physical ones, c l / p of them (the buffer's budget).
TEST_F(BufferJobTest, LogicalPartitionsAreRegroupedEveryEpochDeterministically) {
  const JobConfig j = job("{storage: disk, partitions: 4, buffer: 2}", "disk");
  run_in_process(j);  // partitions the data
  const PartitionFolder folder(j.partition_dir());
  const KgTriples triples(folder);
  const std::vector<int64_t> ids = table_ids(triples, j.seed);
  const EmbeddingPartitions::Shape shape = buffer_table_shape(triples.num_entities(), 4, 8);
  auto plan = [&](uint64_t seed, uint64_t epoch) {
    return plan_bucket_epoch(triples, ids, shape, 4, 2, seed, epoch, j.batch_size);
  };
  std::set<std::vector<int>> groupings;
  for (uint64_t epoch = 1; epoch <= 4; ++epoch) {
    const BucketEpoch a = plan(j.seed, epoch);
    EXPECT_EQ(a.group_of, plan(j.seed, epoch).group_of);
    EXPECT_EQ(a.edges, plan(j.seed, epoch).edges);
    ASSERT_EQ(a.group_of.size(), 16u);
    std::vector<int> sizes(4, 0);
    for (int g : a.group_of) {
      ASSERT_GE(g, 0);
      ASSERT_LT(g, 4);
      ++sizes[static_cast<size_t>(g)];
    }
    EXPECT_EQ(sizes, std::vector<int>(4, 4));
    for (size_t k = 0; k < a.order.states.size(); ++k) {
      const std::vector<int>& state = a.order.states[k];
      std::vector<int> expected;
      for (int l = 0; l < 16; ++l) {
        if (std::find(state.begin(), state.end(), a.group_of[static_cast<size_t>(l)]) != state.end()) expected.push_back(l);
      }
      EXPECT_EQ(a.resident[k], expected) << "state " << k;
      EXPECT_EQ(a.resident[k].size(), 8u);
    }
    groupings.insert(a.group_of);
  }
  EXPECT_GT(groupings.size(), 1u);
  EXPECT_NE(plan(j.seed, 1).group_of, plan(j.seed + 1, 1).group_of);
  // A table of fewer than 4 entities per physical partition groups what it has.
  EXPECT_EQ(buffer_table_shape(60, 20, 8).num_partitions, 60);
  EXPECT_EQ(buffer_table_shape(60, 60, 8).num_partitions, 60);
  EXPECT_THROW(plan_bucket_epoch(triples, ids, shape, 3, 2, j.seed, 1, j.batch_size), Error);
}

// The negatives' correction (embeddings/bucket_epoch.h): for every bucket, the rates weigh
// the entities it can meet to a total of one in-memory draw; the ends' partitions, always
// resident, are drawn at N / N_S of the in-memory rate; one state holding everything
// needs no correction.
TEST_F(BufferJobTest, NegativeRatesAreNormalisedAndFavourTheEndsPartitions) {
  const JobConfig j = job("{storage: disk, partitions: 4, buffer: 3}", "disk");
  run_in_process(j);  // partitions the data
  const PartitionFolder folder(j.partition_dir());
  const KgTriples triples(folder);
  const std::vector<int64_t> ids = table_ids(triples, j.seed);
  const EmbeddingPartitions::Shape shape = buffer_table_shape(triples.num_entities(), 4, 8);
  const BucketEpoch plan = plan_bucket_epoch(triples, ids, shape, 4, 3, j.seed, 1, j.batch_size);
  ASSERT_EQ(plan.log_rate.size(), 64u);
  std::vector<double> rows(4, 0.0);
  for (int l = 0; l < shape.num_partitions; ++l) {
    rows[static_cast<size_t>(plan.group_of[static_cast<size_t>(l)])] += static_cast<double>(shape.end(l) - shape.begin(l));
  }
  const double n = static_cast<double>(shape.num_entities);
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 4; ++b) {
      const double* rate = plan.log_rate.data() + (a * 4 + b) * 4;
      // The states that can train the bucket, and how many of them hold each partition.
      int holders = 0;
      std::vector<int> holding(4, 0);
      for (const std::vector<int>& state : plan.order.states) {
        auto has = [&](int x) { return std::find(state.begin(), state.end(), x) != state.end(); };
        if (!has(a) || !has(b)) continue;
        ++holders;
        for (int x = 0; x < 4; ++x) holding[static_cast<size_t>(x)] += has(x) ? 1 : 0;
      }
      double total = 0;
      for (int x = 0; x < 4; ++x) {
        if (holding[static_cast<size_t>(x)] > 0) total += rows[static_cast<size_t>(x)] * std::exp(rate[x]) / n;
      }
      EXPECT_NEAR(total, 1.0, 1e-9) << "bucket " << a << ", " << b;
      for (int x = 0; x < 4; ++x) {
        if (x == a || x == b || holding[static_cast<size_t>(x)] == 0) continue;
        if (holding[static_cast<size_t>(x)] < holders) {
          EXPECT_GT(rate[a], rate[x]) << "bucket " << a << ", " << b;
          EXPECT_GT(rate[b], rate[x]) << "bucket " << a << ", " << b;
        } else {
          EXPECT_EQ(rate[a], rate[x]) << "bucket " << a << ", " << b;
        }
      }
    }
  }
  EXPECT_TRUE(plan_bucket_epoch(triples, ids, shape, 4, 4, j.seed, 1, j.batch_size).log_rate.empty());
}

// A disk job stopped after an epoch and resumed trains the next epoch loss for loss as the
// uninterrupted job and ends with the same table, byte for byte: the checkpoint is the
// relations, their optimiser and a snapshot of the partition files at the epoch's end.
TEST_F(BufferJobTest, ResumingFromACheckpointEndsInTheSameState) {
  const JobReport whole = run_in_process(job("{storage: disk, partitions: 4, buffer: 2}", "whole"));
  const JobConfig j = job("{storage: disk, partitions: 4, buffer: 2}", "parts");
  RunOptions first;
  first.stop_after_epoch = 1;
  run_in_process(j, first);
  RunOptions rest;
  rest.resume = true;
  const JobReport resumed = run_in_process(j, rest);
  ASSERT_EQ(resumed.first_epoch, 2);
  ASSERT_EQ(resumed.epochs.size(), 1u);
  EXPECT_EQ(resumed.epochs[0].step_losses, whole.epochs[1].step_losses);
  EXPECT_EQ(resumed.parameter_hash, whole.parameter_hash);
  EXPECT_EQ(resumed.epochs[0].ranking_metric("test.mrr"), whole.epochs[1].ranking_metric("test.mrr"));
  const PartitionFolder folder(j.partition_dir());
  const KgTriples triples(folder);
  const EmbeddingPartitions::Shape shape = buffer_table_shape(triples.num_entities(), 4, 8);
  const EmbeddingPartitions a = EmbeddingPartitions::open(tmp_ / "whole/embeddings", shape);
  const EmbeddingPartitions b = EmbeddingPartitions::open(tmp_ / "parts/embeddings", shape);
  for (int i = 0; i < shape.num_partitions; ++i) {
    std::vector<float> x(a.payload_bytes(i) / sizeof(float)), y(x.size());
    a.read(i, Span<float>(x));
    b.read(i, Span<float>(y));
    EXPECT_EQ(x, y) << "partition " << i;
  }
  // A snapshot of another epoch than the checkpoint's is named, not loaded.
  testing::write_text(tmp_ / "parts/embeddings/checkpoint/tag", "epoch 7");
  std::string what;
  try {
    run_in_process(j, rest);
  } catch (const Error& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("snapshot in " + (tmp_ / "parts/embeddings/checkpoint") + " is of epoch 7, the checkpoint of epoch 2"),
            std::string::npos)
      << what;
}

// An epoch that fails midway (a partition file corrupt, met when the walk admits it) ends
// with a named error, and the buffer settled: every other partition file is whole, and
// those trained before the failure hold their trained rows, not the epoch's first ones.
TEST_F(BufferJobTest, AnEpochThatFailsMidwayIsNamedAndLeavesTheFilesWhole) {
  const JobConfig j = job("{storage: disk, partitions: 4, buffer: 2}", "failing");
  RunOptions first;
  first.stop_after_epoch = 1;
  run_in_process(j, first);
  const PartitionFolder folder(j.partition_dir());
  const KgTriples triples(folder);
  const EmbeddingPartitions::Shape shape = buffer_table_shape(triples.num_entities(), 4, 8);
  const BucketEpoch plan = plan_bucket_epoch(triples, table_ids(triples, j.seed), shape, 4, 2, j.seed, 2, j.batch_size);
  const std::vector<int>& first_state = plan.resident[0];
  int corrupt = 0;
  while (std::find(first_state.begin(), first_state.end(), corrupt) != first_state.end()) ++corrupt;
  // The resumed job restores the snapshot, whose files are the table's (links): corrupt
  // one payload byte of a partition the epoch's first state does not hold.
  const EmbeddingPartitions snapshot = EmbeddingPartitions::open(tmp_ / "failing/embeddings/checkpoint", shape);
  auto payload_of = [](const EmbeddingPartitions& table, int part) {
    std::vector<float> payload(table.payload_bytes(part) / sizeof(float));
    table.read(part, Span<float>(payload));
    return payload;
  };
  std::vector<std::vector<float>> before;
  for (int i = 0; i < shape.num_partitions; ++i) before.push_back(payload_of(snapshot, i));
  {
    std::fstream f(snapshot.file(corrupt), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(64 + 5);
    f.put('\x7f');
  }
  RunOptions rest;
  rest.resume = true;
  std::string what;
  try {
    run_in_process(j, rest);
  } catch (const Error& e) {
    what = e.what();
  }
  const EmbeddingPartitions table = EmbeddingPartitions::open(tmp_ / "failing/embeddings", shape);
  EXPECT_NE(what.find(table.file(corrupt)), std::string::npos) << what;
  EXPECT_NE(what.find("checksum mismatch"), std::string::npos) << what;
  for (int i = 0; i < shape.num_partitions; ++i) {
    if (i == corrupt) continue;
    std::vector<float> now;
    ASSERT_NO_THROW(now = payload_of(table, i)) << "partition " << i;
    if (std::find(first_state.begin(), first_state.end(), i) != first_state.end()) {
      EXPECT_NE(now, before[static_cast<size_t>(i)]) << "partition " << i << " trained in the first state";
    }
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
  const JobConfig j = load_job(std::string(testing::kSourceDir) + "/examples/fb15k237_buffer.yaml");
  EXPECT_TRUE(j.link.on_disk());
  EXPECT_EQ(j.link.embedding_partitions, 8);
  EXPECT_EQ(j.link.embedding_buffer, 4);
  EXPECT_EQ(j.num_partitions, 1);
  EXPECT_EQ(fs::path(j.dataset).filename(), "fb15k-237");
}

}  // namespace
}  // namespace partita
