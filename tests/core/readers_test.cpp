#include "partitioner/readers.h"
#include "partitioner/splits.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "base/error.h"
#include "expect_error.h"
#include "partitioner/npy.h"
#include "test_util.h"

namespace partita {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::write_text;

// The message of the Error that `read` throws; fails the test if it throws none.
template <typename F>
std::string error_of(F&& read) {
  try {
    read();
  } catch (const UsageError& e) {
    ADD_FAILURE() << "expected an input Error, got a UsageError: " << e.what();
    return e.what();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an Error";
  return "";
}

std::vector<std::pair<int64_t, int64_t>> pairs(const EdgeList& e) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t i = 0; i < e.size(); ++i) out.emplace_back(e.src[i], e.dst[i]);
  return out;
}

bool disjoint(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> both;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
  return both.empty();
}

// ---------------------------------------------------------------------------------------
// LINQS

class LinqsCoraTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cora_ = new Dataset(read_linqs(testing::dataset_path("cora"))); }
  static void TearDownTestSuite() {
    delete cora_;
    cora_ = nullptr;
  }
  static Dataset* cora_;
};
Dataset* LinqsCoraTest::cora_ = nullptr;

TEST_F(LinqsCoraTest, HasThePublishedCounts) {
  const Dataset& d = *cora_;
  EXPECT_EQ(d.name, "cora");
  EXPECT_EQ(d.num_nodes, 2708);
  EXPECT_EQ(d.num_edges(), 10556);
  EXPECT_EQ(d.feature_dim, 1433);
  EXPECT_EQ(d.x.size(), 2708u * 1433u);
  EXPECT_EQ(d.num_classes, 7);
  EXPECT_EQ(d.node_names.size(), 2708u);
  EXPECT_FALSE(d.is_hetero());
}

TEST_F(LinqsCoraTest, ClassesAreNumberedInSortedOrderOfTheirNames) {
  // From the dataset's README, in sorted order of the label names.
  const std::vector<int64_t> sizes = {298, 418, 818, 426, 217, 180, 351};
  std::vector<int64_t> counted(7, 0);
  for (int64_t label : cora_->y) counted.at(label)++;
  EXPECT_EQ(counted, sizes);
}

TEST_F(LinqsCoraTest, KeepsPaperIdsAndFeatureRows) {
  // First line of cora.content: paper 31336, 20 words present, Neural_Networks (class 2).
  const Dataset& d = *cora_;
  EXPECT_EQ(d.node_names[0], "31336");
  EXPECT_EQ(d.y[0], 2);
  float ones = 0;
  for (int64_t f = 0; f < d.feature_dim; ++f) {
    float v = d.x[f];
    EXPECT_TRUE(v == 0.f || v == 1.f);
    ones += v;
  }
  EXPECT_EQ(ones, 20.f);
}

TEST_F(LinqsCoraTest, EdgesAreUndirectedUniqueLoopFreeAndSortedByDstThenSrc) {
  const Dataset& d = *cora_;
  auto edges = pairs(d.edges);
  std::set<std::pair<int64_t, int64_t>> set(edges.begin(), edges.end());
  EXPECT_EQ(set.size(), edges.size()) << "duplicate edges";
  for (const auto& [s, t] : edges) {
    EXPECT_NE(s, t);
    EXPECT_TRUE(set.count({t, s})) << s << " -> " << t << " has no reverse edge";
  }
  for (size_t i = 1; i < edges.size(); ++i) {
    auto prev = std::make_pair(edges[i - 1].second, edges[i - 1].first);
    auto cur = std::make_pair(edges[i].second, edges[i].first);
    ASSERT_LT(prev, cur) << "edges not sorted by (dst, src) at " << i;
  }
}

TEST_F(LinqsCoraTest, SplitHasTwentyPerClassThenValidationAndTest) {
  const Dataset& d = *cora_;
  ASSERT_EQ(d.train_idx.size(), 140u);
  ASSERT_EQ(d.val_idx.size(), 500u);
  ASSERT_EQ(d.test_idx.size(), 1000u);
  for (const auto* split : {&d.train_idx, &d.val_idx, &d.test_idx}) {
    EXPECT_TRUE(std::is_sorted(split->begin(), split->end()));
  }
  EXPECT_TRUE(disjoint(d.train_idx, d.val_idx));
  EXPECT_TRUE(disjoint(d.train_idx, d.test_idx));
  EXPECT_TRUE(disjoint(d.val_idx, d.test_idx));
  std::vector<int> per_class(7, 0);
  for (int64_t node : d.train_idx) per_class[d.y[node]]++;
  EXPECT_EQ(per_class, std::vector<int>(7, 20));
}

TEST_F(LinqsCoraTest, SplitIsSeeded) {
  ReadOptions same;
  Dataset again = read_linqs(testing::dataset_path("cora"), same);
  EXPECT_EQ(again.train_idx, cora_->train_idx);
  EXPECT_EQ(again.val_idx, cora_->val_idx);
  EXPECT_EQ(again.test_idx, cora_->test_idx);
  ReadOptions other;
  other.split_seed = 7;
  Dataset reseeded = read_linqs(testing::dataset_path("cora"), other);
  EXPECT_NE(reseeded.train_idx, cora_->train_idx);
  EXPECT_NE(reseeded.val_idx, cora_->val_idx);
  EXPECT_NE(reseeded.test_idx, cora_->test_idx);
  EXPECT_EQ(pairs(reseeded.edges), pairs(cora_->edges)) << "the seed must change only the split";
}

TEST_F(LinqsCoraTest, AcceptsTheFolderThePrefixOrAFile) {
  std::string folder = testing::dataset_path("cora");
  for (const std::string& path : {folder + "/cora", folder + "/cora.content", folder + "/cora.cites", folder + "/"}) {
    Dataset d = read_linqs(path);
    EXPECT_EQ(d.name, "cora") << path;
    EXPECT_EQ(d.num_edges(), 10556) << path;
    EXPECT_EQ(d.train_idx, cora_->train_idx) << path;
  }
}

// A tiny LINQS dataset: ids are strings, whitespace of any kind separates fields.
void write_tiny_linqs(const TempDir& dir, const std::string& cites) {
  write_text(dir / "tiny.content",
             "p1\t1\t0\tzeta\n"
             "p2 0 1 alpha\r\n"
             "\n"
             "p3\t0.5\t-2\talpha\n"
             "p4\t0\t0\tzeta\n"
             "p5\t1\t1\tmid\n");
  write_text(dir / "tiny.cites", cites);
}

TEST(LinqsTest, MergesDropsAndSkipsCitationsAsDocumented) {
  TempDir dir;
  write_tiny_linqs(dir,
                   "p1\tp2\n"
                   "p2\tp1\n"        // the same pair cited the other way: merged
                   "p3\tp3\n"        // self-citation: dropped
                   "p1\tghost\n"     // dangling: counted and skipped
                   "nobody\tp4\n"    // dangling
                   "p4\tp3\n"
                   "p1\tp2\n");      // repeated
  testing::LogCapture log;
  Dataset d = read_linqs(dir / "tiny");
  EXPECT_EQ(d.name, "tiny");
  EXPECT_EQ(d.num_nodes, 5);
  EXPECT_EQ(d.node_names, (std::vector<std::string>{"p1", "p2", "p3", "p4", "p5"}));
  // Sorted by (dst, src): p1=0, p2=1, p3=2, p4=3.
  EXPECT_EQ(pairs(d.edges), (std::vector<std::pair<int64_t, int64_t>>{{1, 0}, {0, 1}, {3, 2}, {2, 3}}));
  EXPECT_CONTAINS(log.text(), "skipped 2 citations");
  EXPECT_CONTAINS(log.text(), "tiny.cites");
  // Labels in sorted order: alpha=0, mid=1, zeta=2.
  EXPECT_EQ(d.y, (std::vector<int64_t>{2, 0, 0, 2, 1}));
  EXPECT_EQ(d.num_classes, 3);
  EXPECT_EQ(d.feature_dim, 2);
  EXPECT_EQ(d.x, (std::vector<float>{1, 0, 0, 1, 0.5f, -2, 0, 0, 1, 1}));
}

TEST(LinqsTest, SmallGraphsGetWhatRemainsForValidationAndTest) {
  TempDir dir;
  write_tiny_linqs(dir, "p1\tp2\n");
  Dataset d = read_linqs(dir.path());
  // Every class has fewer than 20 papers, so all of them train and nothing is left.
  EXPECT_EQ(d.train_idx, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(d.val_idx.empty());
  EXPECT_TRUE(d.test_idx.empty());
}

TEST(LinqsTest, ValidationComesBeforeTestWhenFewNodesRemain) {
  TempDir dir;
  std::string content;
  for (int i = 0; i < 700; ++i) content += "n" + std::to_string(i) + "\t1\tonly\n";
  write_text(dir / "g.content", content);
  write_text(dir / "g.cites", "n0\tn1\n");
  Dataset d = read_linqs(dir / "g");
  EXPECT_EQ(d.train_idx.size(), 20u);
  EXPECT_EQ(d.val_idx.size(), 500u);
  EXPECT_EQ(d.test_idx.size(), 180u);
}

TEST(LinqsTest, RaggedRowNamesTheLine) {
  TempDir dir;
  write_text(dir / "r.content", "a\t1\t0\tx\nb\t1\tx\n");
  write_text(dir / "r.cites", "a\tb\n");
  EXPECT_CONTAINS(error_of([&] { read_linqs(dir / "r"); }),
                  dir / "r.content:2: has 1 features, the first paper has 2");
}

TEST(LinqsTest, ContentAndCitesErrorsNameTheLine) {
  TempDir dir;
  write_text(dir / "d.content", "a\t1\tx\n\nb\t0\tx\na\t1\tx\n");
  write_text(dir / "d.cites", "a\tb\n");
  EXPECT_CONTAINS(error_of([&] { read_linqs(dir / "d"); }), dir / "d.content:4: paper 'a' already appears on line 1");

  write_text(dir / "f.content", "a\t1\tx\nb\tone\tx\n");
  write_text(dir / "f.cites", "a\tb\n");
  EXPECT_CONTAINS(error_of([&] { read_linqs(dir / "f"); }), dir / "f.content:2: feature 1 ('one') is not a number");

  write_text(dir / "s.content", "a\t1\tx\nlonely\n");
  write_text(dir / "s.cites", "a\tb\n");
  EXPECT_CONTAINS(error_of([&] { read_linqs(dir / "s"); }), dir / "s.content:2: expected: paper_id");

  write_text(dir / "c.content", "a\t1\tx\nb\t0\tx\n");
  write_text(dir / "c.cites", "a\tb\na\tb\tc\n");
  EXPECT_CONTAINS(error_of([&] { read_linqs(dir / "c"); }), dir / "c.cites:2: expected 2 paper ids");
}

TEST(LinqsTest, MissingOrAmbiguousFilesAreNamed) {
  TempDir dir;
  EXPECT_CONTAINS(error_of([&] { read_linqs(dir.path()); }), "no .content file");
  write_text(dir / "a.content", "a\t1\tx\n");
  EXPECT_CONTAINS(error_of([&] { read_linqs(dir.path()); }), dir / "a.cites: cannot open");
  write_text(dir / "b.content", "a\t1\tx\n");
  EXPECT_CONTAINS(error_of([&] { read_linqs(dir.path()); }), "several .content files");
  write_text(dir / "e.content", "\n\n");
  write_text(dir / "e.cites", "");
  EXPECT_CONTAINS(error_of([&] { read_linqs(dir / "e"); }), dir / "e.content: no papers");
}

// ---------------------------------------------------------------------------------------
// Edge lists

TEST(EdgelistTest, ParsesCommentsBlankLinesTabsAndCrlf) {
  TempDir dir;
  write_text(dir / "g.txt",
             "# FromNodeId\tToNodeId\n"
             "0 1\n"
             "\r\n"
             "1\t2   # trailing comment\r\n"
             "   \n"
             "5 0\r\n"
             "2 2\n"
             "0 1");  // no final newline; repeated pair kept
  Dataset d = read_edgelist(dir / "g.txt");
  EXPECT_EQ(d.name, "g");
  EXPECT_EQ(d.num_nodes, 6);
  EXPECT_EQ(pairs(d.edges), (std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 2}, {5, 0}, {2, 2}, {0, 1}}));
  EXPECT_TRUE(d.x.empty());
  EXPECT_TRUE(d.train_idx.empty());
}

TEST(EdgelistTest, AcceptsIdsUpToSixteenPerEdgePlusAMillion) {
  TempDir dir;
  // One edge: ids up to 16 * 1 + 1,000,000 - 1, i.e. N up to 1,000,016.
  write_text(dir / "g.txt", "1000015 0\n");
  EXPECT_EQ(read_edgelist(dir / "g.txt").num_nodes, 1000016);
  write_text(dir / "g.txt", "1000016 0\n");
  EXPECT_CONTAINS(error_of([&] { read_edgelist(dir / "g.txt"); }),
                  dir / "g.txt:1: node id 1000016 is far beyond the number of edges (1)");
}

TEST(EdgelistTest, SparseIdsAreRejectedNamingTheLineOfTheLargest) {
  TempDir dir;
  // Such ids would size every per-node array by the id (and INT64_MAX + 1 overflows), so
  // they must fail here with a hint, not as an out-of-memory kill or "graph is empty".
  const std::pair<std::string, std::string> cases[] = {
      {"0 1\n# hash ids\n5 9000000000000000\n1 2\n", ":3: node id 9000000000000000 is far beyond the number of edges (3)"},
      {"9223372036854775807 0\n0 9223372036854775807\n", ":1: node id 9223372036854775807 is far beyond"},
  };
  for (const auto& [text, problem] : cases) {
    write_text(dir / "sparse.txt", text);
    std::string message = error_of([&] { read_edgelist(dir / "sparse.txt"); });
    EXPECT_CONTAINS(message, dir / "sparse.txt" + problem);
    EXPECT_CONTAINS(message, "remap");
  }
}

TEST(EdgelistTest, RemapNumbersSparseIdsAndNamesByFirstAppearance) {
  TempDir dir;
  // PubMed-like PMIDs and a named node: refused as they are, read with remap_ids.
  write_text(dir / "pmids.txt", "19127292 17363749\n# cites\n17363749 9000000000000000\nalice 19127292\n");
  EXPECT_CONTAINS(error_of([&] { read_edgelist(dir / "pmids.txt"); }), "'alice' is not a node id");
  ReadOptions remap;
  remap.remap_ids = true;
  Dataset d = read_edgelist(dir / "pmids.txt", remap);
  EXPECT_EQ(d.num_nodes, 4);
  EXPECT_EQ(pairs(d.edges), (std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 2}, {3, 0}}));
  EXPECT_EQ(d.node_names, (std::vector<std::string>{"19127292", "17363749", "9000000000000000", "alice"}));
  // The sparse-id message points at the option.
  write_text(dir / "sparse.txt", "0 9000000000000000\n");
  EXPECT_CONTAINS(error_of([&] { read_edgelist(dir / "sparse.txt"); }), "--remap-ids");
}

TEST(EdgelistTest, UndirectedIsTheSymmetricClosureEachPairOnce) {
  TempDir dir;
  // A repeated pair, a pair given both ways, a self-loop twice, a one-way edge.
  write_text(dir / "g.txt", "0 1\n0 1\n2 1\n1 2\n3 3\n3 3\n3 0\n");
  ReadOptions undirected;
  undirected.undirected = true;
  Dataset d = read_edgelist(dir / "g.txt", undirected);
  EXPECT_EQ(d.num_nodes, 4);
  // Sorted by (dst, src).
  EXPECT_EQ(pairs(d.edges),
            (std::vector<std::pair<int64_t, int64_t>>{{1, 0}, {3, 0}, {0, 1}, {2, 1}, {1, 2}, {0, 3}, {3, 3}}));
  // Both options together: names first, then the closure over the new ids.
  write_text(dir / "named.txt", "b a\nc a\n");
  undirected.remap_ids = true;
  Dataset named = read_edgelist(dir / "named.txt", undirected);
  EXPECT_EQ(named.node_names, (std::vector<std::string>{"b", "a", "c"}));
  EXPECT_EQ(pairs(named.edges), (std::vector<std::pair<int64_t, int64_t>>{{1, 0}, {0, 1}, {2, 1}, {1, 2}}));
}

// A usage error (the options asked for), not an input error: nothing is read.
TEST(EdgelistTest, EdgeListOptionsAreRefusedForOtherFormats) {
  TempDir dir;
  ReadOptions remap;
  remap.remap_ids = true;
  testing::expect_usage_error([&] { read_dataset("npy", dir.path(), remap); },
                              "remapping ids applies to edge lists only (format edgelist), not to format 'npy'");
  ReadOptions undirected;
  undirected.undirected = true;
  testing::expect_usage_error([&] { read_dataset("triples", dir.path(), undirected); },
                              "making the graph undirected applies to edge lists only");
}

TEST(EdgelistTest, EveryMalformedLineIsNamed) {
  TempDir dir;
  const std::pair<std::string, std::string> cases[] = {
      {"0 1\n1 x\n", ":2: 'x' is not a node id (expected a non-negative integer)"},
      {"0 1\n# c\n2 -3\n", ":3: negative node id -3"},
      {"0 1\n\n\n7\n", ":4: expected 2 columns (src dst), found 1"},
      {"0 1 2\n", ":1: expected 2 columns (src dst), found 3"},
      {"0 1.5\n", ":1: '1.5' is not a node id"},
      {"0 1\r\n2 3x\r\n", ":2: '3x' is not a node id"},
      {"1 99999999999999999999\n", ":1: '99999999999999999999' is not a node id"},
  };
  for (const auto& [text, problem] : cases) {
    write_text(dir / "bad.txt", text);
    EXPECT_CONTAINS(error_of([&] { read_edgelist(dir / "bad.txt"); }), dir / "bad.txt" + problem);
  }
}

TEST(EdgelistTest, EmptyAndMissingFilesAreErrors) {
  TempDir dir;
  write_text(dir / "empty.txt", "# nothing here\n\n");
  EXPECT_CONTAINS(error_of([&] { read_edgelist(dir / "empty.txt"); }), dir / "empty.txt: no edges");
  EXPECT_CONTAINS(error_of([&] { read_edgelist(dir / "absent.txt"); }), dir / "absent.txt: cannot open");
}

// ---------------------------------------------------------------------------------------
// RDF entity classification (N-Triples)

TEST(NTriplesTest, AifbHasThePublishedCountsAndNoLabelPredicate) {
  Dataset d = read_ntriples(testing::dataset_path("aifb"));
  EXPECT_EQ(d.name, "aifb");
  // The data README: 29,043 triples, 8,285 distinct subjects and objects, 5,450 literals.
  EXPECT_EQ(d.num_nodes, 8285);
  EXPECT_EQ(d.num_edges(), 2 * 29043);
  EXPECT_EQ(std::count(d.node_type.begin(), d.node_type.end(), 2), 5450);
  EXPECT_EQ(d.node_type_names, (std::vector<std::string>{"entity", "class", "literal"}));
  EXPECT_EQ(d.num_classes, 4);
  EXPECT_EQ(d.train_idx.size() + d.val_idx.size(), 140u);
  EXPECT_EQ(d.val_idx.size(), 28u);
  EXPECT_EQ(d.test_idx.size(), 36u);
  std::set<std::string> predicates;
  for (const EdgeType& t : d.edge_types) predicates.insert(t.relation);
  // 45 predicates, each with its inverse.
  std::set<std::string> forward;
  for (const std::string& p : predicates) {
    if (p[0] != '^') forward.insert(p);
  }
  EXPECT_EQ(forward.size(), 45u);
  for (const std::string& p : forward) EXPECT_TRUE(predicates.count("^" + p)) << p;
  EXPECT_FALSE(predicates.count("http://swrc.ontoware.org/ontology#affiliation"));
  EXPECT_FALSE(predicates.count("http://swrc.ontoware.org/ontology#employs"));
  // Every labelled node is an entity.
  for (const auto* split : {&d.train_idx, &d.val_idx, &d.test_idx}) {
    for (int64_t v : *split) {
      EXPECT_EQ(d.node_type[v], 0);
      EXPECT_GE(d.y[v], 0);
    }
  }
}

void write_rdf(const TempDir& dir, const std::string& graph, const std::string& train, const std::string& test) {
  write_text(dir / "g.nt", graph);
  write_text(dir / "trainingSet.tsv", "person\tid\tlabel_affiliation\n" + train);
  write_text(dir / "testSet.tsv", "person\tid\tlabel_affiliation\n" + test);
}

TEST(NTriplesTest, NodesTypesInversesAndLabels) {
  TempDir dir;
  write_rdf(dir,
            "# a comment\n"
            "<http://x/a> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://x/Person> .\n"
            "<http://x/a> <http://x/name> \"A \\\"quoted\\\" name\"@en .\n"
            "<http://x/b> <http://x/name> \"B\" .\n"
            "<http://x/b> <http://x/year> \"B\"^^<http://www.w3.org/2001/XMLSchema#string> .\n"
            "_:n1 <http://x/knows> <http://x/a> .\n"
            "<http://x/a> <http://x/ontology#affiliation> <http://x/g1> .\n"
            "<http://x/g2> <http://x/ontology#employs> <http://x/b> .\n"
            "\r\n"
            "<http://x/b> <http://x/name> \"B\" .\n",
            "http://x/a\t1.0\thttp://x/g1\n", "http://x/b\t2.0\thttp://x/g2\n");
  Dataset d = read_ntriples(dir.path());
  // Nodes in order of first appearance; the label triples never make their nodes.
  EXPECT_EQ(d.node_names, (std::vector<std::string>{"<http://x/a>", "<http://x/Person>",
                                                    "\"A \\\"quoted\\\" name\"@en", "<http://x/b>", "\"B\"",
                                                    "\"B\"^^<http://www.w3.org/2001/XMLSchema#string>", "_:n1"}));
  EXPECT_EQ(d.node_type, (std::vector<int32_t>{0, 1, 2, 0, 2, 2, 0}));
  // 5 distinct triples (the repeated one merged), each with its inverse.
  ASSERT_EQ(d.num_edges(), 10);
  ASSERT_EQ(d.edge_types.size(), 8u);
  EXPECT_EQ(d.edge_types[0].relation, "http://www.w3.org/1999/02/22-rdf-syntax-ns#type");
  EXPECT_EQ(d.edge_types[0].src_type, "entity");
  EXPECT_EQ(d.edge_types[0].dst_type, "class");
  EXPECT_EQ(d.edge_types[1].relation, "^http://www.w3.org/1999/02/22-rdf-syntax-ns#type");
  EXPECT_EQ(d.edge_types[1].src_type, "class");
  EXPECT_EQ(d.edge_types[2].relation, "http://x/name");
  EXPECT_EQ(d.edge_types[2].dst_type, "literal");
  // Forward edges first, then the inverses in the same order.
  EXPECT_EQ(d.edges.src[1], 0);
  EXPECT_EQ(d.edges.dst[1], 2);
  EXPECT_EQ(d.edges.type[1], 2);
  EXPECT_EQ(d.edges.src[6], 2);
  EXPECT_EQ(d.edges.dst[6], 0);
  EXPECT_EQ(d.edges.type[6], 3);
  EXPECT_EQ(d.num_classes, 2);
  EXPECT_EQ(d.y[0], 0);
  EXPECT_EQ(d.y[3], 1);
  EXPECT_EQ(d.test_idx, std::vector<int64_t>{3});
  EXPECT_EQ(d.train_idx.size() + d.val_idx.size(), 1u);
  // Each relation and its inverse are declared reverses, so a held-out link leaves both.
  EXPECT_EQ(d.reverse_edge_type, (std::vector<int32_t>{1, 0, 3, 2, 5, 4, 7, 6}));
}

TEST(NTriplesTest, AHeldOutAifbLinkLeavesItsInverseToo) {
  Dataset d = read_ntriples(testing::dataset_path("aifb"));
  hold_out_edges(d, 0.0, 0.05, 3);
  ASSERT_GT(d.test_edges.size(), 0);
  ASSERT_EQ(d.test_edges.type.size(), d.test_edges.src.size());
  // A link: its two nodes (either order) and its relation (a predicate or its inverse).
  const auto link = [&](int64_t a, int64_t b, int32_t type) {
    return std::make_tuple(std::min(a, b), std::max(a, b), std::min(type, d.reverse_edge_type[type]));
  };
  std::set<std::tuple<int64_t, int64_t, int32_t>> held;
  for (int64_t i = 0; i < d.test_edges.size(); ++i) {
    held.insert(link(d.test_edges.src[i], d.test_edges.dst[i], d.test_edges.type[i]));
  }
  for (int64_t e = 0; e < d.num_edges(); ++e) {
    ASSERT_EQ(held.count(link(d.edges.src[e], d.edges.dst[e], d.edges.type[e])), 0u)
        << "edge " << e << " (" << d.edge_types[d.edges.type[e]].relation << ") is a held-out link";
  }
  EXPECT_NO_THROW(d.validate());
}

TEST(NTriplesTest, ReadsGzippedGraphsAndNamesBadLabelFiles) {
  TempDir dir;
  write_rdf(dir, "", "http://x/a\t1\tg\n", "http://x/a\t1\tg\n");
  std::filesystem::remove(dir / "g.nt");
  const std::string graph = "<http://x/a> <http://x/p> <http://x/b> .\n<http://x/b> <http://x/p> <http://x/c> .\n";
  write_text(dir / "plain", graph);
  ASSERT_EQ(std::system(("gzip -c " + (dir / "plain") + " > " + (dir / "g.nt.gz")).c_str()), 0);
  EXPECT_CONTAINS(error_of([&] { read_ntriples(dir.path()); }),
                  dir / "testSet.tsv:2: entity 'http://x/a' is labelled more than once");
  write_text(dir / "testSet.tsv", "person\tid\tlabel_affiliation\nhttp://x/c\t1\th\n");
  Dataset d = read_ntriples(dir.path());
  EXPECT_EQ(d.num_nodes, 3);
  EXPECT_EQ(d.num_edges(), 4);
  write_text(dir / "testSet.tsv", "person\tid\tlabel_other\nhttp://x/c\t1\th\n");
  EXPECT_CONTAINS(error_of([&] { read_ntriples(dir.path()); }), dir / "testSet.tsv:1: label column 'label_other' differs");
  write_text(dir / "testSet.tsv", "person\tid\n");
  EXPECT_CONTAINS(error_of([&] { read_ntriples(dir.path()); }),
                  dir / "testSet.tsv:1: expected the header entity<TAB>id<TAB>label_NAME");
  EXPECT_CONTAINS(error_of([&] { read_dataset("ntriples", dir.path() + "/"); }), "expected the header");
}

// ---------------------------------------------------------------------------------------
// Knowledge-graph triples

TEST(TriplesTest, Fb15k237HasThePublishedCounts) {
  Dataset d = read_triples(testing::dataset_path("fb15k-237"));
  EXPECT_EQ(d.name, "fb15k-237");
  EXPECT_EQ(d.num_edges(), 272115);
  EXPECT_EQ(d.val_edges.size(), 17535);
  EXPECT_EQ(d.test_edges.size(), 20466);
  EXPECT_EQ(d.num_nodes, 14541);
  EXPECT_EQ(d.edge_types.size(), 237u);
  EXPECT_EQ(d.node_type_names, std::vector<std::string>{"entity"});
  EXPECT_EQ(d.node_type, std::vector<int32_t>(14541, 0));
  EXPECT_EQ(d.node_names.size(), 14541u);
  EXPECT_EQ(d.edges.type.size(), 272115u);
  EXPECT_EQ(d.val_edges.type.size(), 17535u);
  EXPECT_EQ(d.test_edges.type.size(), 20466u);
  // Ids follow first appearance, train first: its 14,505 entities come first.
  int64_t max_train = std::max(*std::max_element(d.edges.src.begin(), d.edges.src.end()),
                               *std::max_element(d.edges.dst.begin(), d.edges.dst.end()));
  EXPECT_EQ(max_train, 14504);
  // First line of train.txt: /m/027rn /location/country/form_of_government /m/06cx9 (CRLF).
  EXPECT_EQ(d.node_names[0], "/m/027rn");
  EXPECT_EQ(d.node_names[1], "/m/06cx9");
  EXPECT_EQ(d.edge_types[0].relation, "/location/country/form_of_government");
  EXPECT_EQ(d.edge_types[0].src_type, "entity");
  EXPECT_EQ(d.edge_types[0].dst_type, "entity");
  EXPECT_EQ(d.edges.src[0], 0);
  EXPECT_EQ(d.edges.dst[0], 1);
  EXPECT_EQ(d.edges.type[0], 0);
}

void write_triples(const TempDir& dir, const std::string& train, const std::string& valid,
                   const std::string& test) {
  write_text(dir / "train.txt", train);
  write_text(dir / "valid.txt", valid);
  write_text(dir / "test.txt", test);
}

TEST(TriplesTest, IdsFollowFirstAppearanceAcrossTrainValidTest) {
  TempDir dir;
  write_triples(dir, "a\tlikes\tb\r\nb\tknows\tc\r\nb\tsees\ta\r\n\r\n", "d\tlikes\ta\r\n", "c\tsees\te\n");
  Dataset d = read_triples(dir.path() + "/");
  // Entities only in valid or test (d, e) are kept, as FB15k-237's 14,541 count them.
  EXPECT_EQ(d.node_names, (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  ASSERT_EQ(d.edge_types.size(), 3u);
  EXPECT_EQ(d.edge_types[0].relation, "likes");
  EXPECT_EQ(d.edge_types[1].relation, "knows");
  EXPECT_EQ(d.edge_types[2].relation, "sees");
  EXPECT_EQ(pairs(d.edges), (std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 2}, {1, 0}}));
  EXPECT_EQ(d.edges.type, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(pairs(d.val_edges), (std::vector<std::pair<int64_t, int64_t>>{{3, 0}}));
  EXPECT_EQ(d.val_edges.type, std::vector<int32_t>{0});
  EXPECT_EQ(pairs(d.test_edges), (std::vector<std::pair<int64_t, int64_t>>{{2, 4}}));
  EXPECT_EQ(d.test_edges.type, std::vector<int32_t>{2});
  EXPECT_TRUE(d.is_hetero());
}

TEST(TriplesTest, MalformedLinesAreNamed) {
  TempDir dir;
  write_triples(dir, "a\tr\tb\r\na\tr\r\n", "", "");
  EXPECT_CONTAINS(error_of([&] { read_triples(dir.path()); }),
                  dir / "train.txt:2: expected 3 tab-separated fields (head, relation, tail), found 2");
  write_triples(dir, "a\tr\tb\n", "a\tr\tb\n\na b c\n", "");
  EXPECT_CONTAINS(error_of([&] { read_triples(dir.path()); }), dir / "valid.txt:3: expected 3 tab-separated fields");
  write_triples(dir, "a\tr\tb\n", "", "a\tr\tb\textra\n");
  EXPECT_CONTAINS(error_of([&] { read_triples(dir.path()); }), dir / "test.txt:1: expected 3 tab-separated fields (head, relation, tail), found 4");
  write_triples(dir, "a\t\tb\n", "", "");
  EXPECT_CONTAINS(error_of([&] { read_triples(dir.path()); }), dir / "train.txt:1: empty relation");
  write_triples(dir, "", "a\tr\tb\n", "");
  EXPECT_CONTAINS(error_of([&] { read_triples(dir.path()); }), dir / "train.txt: no triples");
}

// A held-out triple whose relation train.txt lacks: nothing could learn it (an evaluation
// file of another vocabulary).
TEST(TriplesTest, AHeldOutRelationOutsideTheTrainingSetIsNamed) {
  TempDir dir;
  write_triples(dir, "a\tr\tb\n", "b\tr\ta\n", "a\tr\tb\nb\tr_unknown\ta\n");
  EXPECT_CONTAINS(error_of([&] { read_triples(dir.path()); }),
                  dir / "test.txt:2: relation 'r_unknown' does not occur in train.txt");
}

TEST(TriplesTest, MissingFileIsNamed) {
  TempDir dir;
  write_text(dir / "train.txt", "a\tr\tb\n");
  write_text(dir / "test.txt", "a\tr\tb\n");
  EXPECT_CONTAINS(error_of([&] { read_triples(dir.path()); }), dir / "valid.txt: cannot open");
}

// ---------------------------------------------------------------------------------------
// Folders of .npy files

template <typename T>
void save(const TempDir& dir, const std::string& name, const std::vector<int64_t>& shape, const std::vector<T>& v) {
  write_npy(dir / name, dtype_of<T>(), shape, v.data());
}

void save_mask(const TempDir& dir, const std::string& name, const std::vector<uint8_t>& mask) {
  save(dir, name, {static_cast<int64_t>(mask.size())}, mask);
  // write_npy has no bool dtype: patch '|u1' to '|b1' in the header, which is all that differs.
  std::string bytes = testing::read_text(dir / name);
  bytes.replace(bytes.find("'|u1'"), 5, "'|b1'");
  write_text(dir / name, bytes);
}

// Every field set: two node types, two edge types, held-out typed edges.
Dataset hetero_dataset() {
  Dataset d;
  d.name = "hetero";
  d.num_nodes = 6;
  d.node_type_names = {"author", "paper"};
  d.node_type = {0, 0, 1, 1, 1, 1};
  d.edge_types = {{"author", "writes", "paper"}, {"paper", "cites", "paper"}};
  d.edges.src = {0, 1, 2, 3, 4};
  d.edges.dst = {2, 3, 3, 4, 5};
  d.edges.type = {0, 0, 1, 1, 1};
  d.reverse_edge_type = {-1, 1};  // cites is its own reverse (validate checks types, not edges)
  d.node_type_feature_dim = {2, 2};
  d.feature_dim = 2;
  d.x = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11.5f};
  d.y = {-1, -1, 0, 2, 1, 0};
  d.num_classes = 3;
  d.edge_feature_dim = 1;
  d.edge_attr = {0.5f, 1.5f, 2.5f, 3.5f, 4.5f};
  d.node_time = {10, 11, 12, 13, 14, 15};
  d.edge_time = {100, 101, 102, 103, 104};
  d.train_idx = {2, 3};
  d.val_idx = {4};
  d.test_idx = {5};
  d.val_edges.src = {0};
  d.val_edges.dst = {5};
  d.val_edges.type = {0};
  d.test_edges.src = {5, 1};
  d.test_edges.dst = {2, 4};
  d.test_edges.type = {1, 0};
  return d;
}

void expect_same_edges(const EdgeList& a, const EdgeList& b, const char* what) {
  EXPECT_EQ(a.src, b.src) << what;
  EXPECT_EQ(a.dst, b.dst) << what;
  EXPECT_EQ(a.type, b.type) << what;
}

TEST(NpyFolderTest, HeteroDatasetRoundTripsWithEveryField) {
  TempDir dir;
  Dataset d = hetero_dataset();
  write_npy_folder(d, dir / "hetero");
  Dataset r = read_npy_folder(dir / "hetero");
  EXPECT_EQ(r.name, "hetero");
  EXPECT_EQ(r.num_nodes, d.num_nodes);
  expect_same_edges(r.edges, d.edges, "edges");
  expect_same_edges(r.val_edges, d.val_edges, "val_edges");
  expect_same_edges(r.test_edges, d.test_edges, "test_edges");
  EXPECT_EQ(r.feature_dim, d.feature_dim);
  EXPECT_EQ(r.x, d.x);
  EXPECT_EQ(r.y, d.y);
  EXPECT_EQ(r.num_classes, d.num_classes);
  EXPECT_EQ(r.edge_feature_dim, d.edge_feature_dim);
  EXPECT_EQ(r.edge_attr, d.edge_attr);
  EXPECT_EQ(r.node_time, d.node_time);
  EXPECT_EQ(r.edge_time, d.edge_time);
  EXPECT_EQ(r.node_type_names, d.node_type_names);
  EXPECT_EQ(r.node_type, d.node_type);
  ASSERT_EQ(r.edge_types.size(), d.edge_types.size());
  for (size_t i = 0; i < d.edge_types.size(); ++i) {
    EXPECT_EQ(r.edge_types[i].src_type, d.edge_types[i].src_type);
    EXPECT_EQ(r.edge_types[i].relation, d.edge_types[i].relation);
    EXPECT_EQ(r.edge_types[i].dst_type, d.edge_types[i].dst_type);
  }
  EXPECT_EQ(r.reverse_edge_type, d.reverse_edge_type);
  EXPECT_EQ(r.node_type_feature_dim, d.node_type_feature_dim);
  EXPECT_EQ(r.train_idx, d.train_idx);
  EXPECT_EQ(r.val_idx, d.val_idx);
  EXPECT_EQ(r.test_idx, d.test_idx);
}

TEST(NpyFolderTest, EdgeIndexIsWrittenAsTwoRowsOfInt64) {
  TempDir dir;
  Dataset d = hetero_dataset();
  write_npy_folder(d, dir.path());
  NpyArray a = read_npy(dir / "edge_index.npy");
  EXPECT_EQ(a.dtype, DType::kInt64);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 5}));
  std::vector<int64_t> ids(10);
  std::memcpy(ids.data(), a.data.data(), a.data.size());
  EXPECT_EQ(ids, (std::vector<int64_t>{0, 1, 2, 3, 4, 2, 3, 3, 4, 5}));
}

TEST(NpyFolderTest, RewritingAFolderRemovesFieldsTheNewDatasetLacks) {
  TempDir dir;
  write_npy_folder(hetero_dataset(), dir.path());
  Dataset plain;
  plain.num_nodes = 3;
  plain.edges.push_back(0, 2);
  write_npy_folder(plain, dir.path());
  Dataset r = read_npy_folder(dir.path());
  EXPECT_EQ(r.num_nodes, 3);
  EXPECT_FALSE(r.is_hetero());
  EXPECT_TRUE(r.x.empty());
  EXPECT_TRUE(r.y.empty());
  EXPECT_TRUE(r.train_idx.empty());
  EXPECT_EQ(r.val_edges.size(), 0);
  EXPECT_FALSE(fs::exists(dir / "types.json"));
}

TEST(NpyFolderTest, ReadsWhatPyGUsersSave) {
  TempDir dir;
  // int32 edge_index, float64 x, int32 y as a column, bool masks, unsorted ids with repeats.
  save<int32_t>(dir, "edge_index.npy", {2, 3}, {0, 1, 2, 1, 2, 0});
  save<double>(dir, "x.npy", {4, 2}, {0.25, 1, 2, 3, 4, 5, 6, 7});
  save<int32_t>(dir, "y.npy", {4, 1}, {1, 0, -1, 4});
  save_mask(dir, "train_idx.npy", {1, 0, 0, 1});
  save<int64_t>(dir, "val_idx.npy", {4}, {2, 1, 2, 1});
  save<int32_t>(dir, "test_idx.npy", {0}, {});
  Dataset d = read_npy_folder(dir.path());
  EXPECT_EQ(d.num_nodes, 4) << "x's rows include the isolated node 3";
  EXPECT_EQ(pairs(d.edges), (std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 2}, {2, 0}}));
  EXPECT_EQ(d.x, (std::vector<float>{0.25f, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(d.y, (std::vector<int64_t>{1, 0, -1, 4}));
  EXPECT_EQ(d.num_classes, 5);
  EXPECT_EQ(d.train_idx, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(d.val_idx, (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(d.test_idx.empty());
}

TEST(NpyFolderTest, WithoutNodeArraysTheLargestIdCountsIncludingHeldOutEdges) {
  TempDir dir;
  save<int64_t>(dir, "edge_index.npy", {2, 2}, {0, 1, 1, 2});
  save<int64_t>(dir, "test_edge_index.npy", {2, 1}, {7, 0});
  Dataset d = read_npy_folder(dir.path());
  EXPECT_EQ(d.num_nodes, 8);
  EXPECT_EQ(pairs(d.test_edges), (std::vector<std::pair<int64_t, int64_t>>{{7, 0}}));
}

// Without node arrays the count is the largest id + 1, so ids must not be sparse: an id
// of INT64_MAX (which once overflowed that + 1, found by fuzz_npy_folder) or one far beyond
// the edges is refused naming its file, as the edge-list reader refuses it.
TEST(NpyFolderTest, WithoutNodeArraysSparseIdsAreRefusedNamingTheFile) {
  TempDir dir;
  save<int64_t>(dir, "edge_index.npy", {2, 2}, {0, 0, 0, std::numeric_limits<int64_t>::max()});
  EXPECT_CONTAINS(error_of([&] { read_npy_folder(dir.path()); }),
                  dir / "edge_index.npy: node id 9223372036854775807 is far beyond the number of edges (2)");
  save<int64_t>(dir, "edge_index.npy", {2, 2}, {0, 1, 1, 2});
  save<int64_t>(dir, "val_edge_index.npy", {2, 1}, {0, 5'000'000});
  EXPECT_CONTAINS(error_of([&] { read_npy_folder(dir.path()); }),
                  dir / "val_edge_index.npy: node id 5000000 is far beyond the number of edges (3)");
}

// Writes a valid 4-node folder, then lets the test break one file.
void write_valid_folder(const TempDir& dir) {
  save<int64_t>(dir, "edge_index.npy", {2, 3}, {0, 1, 2, 1, 2, 3});
  save<float>(dir, "x.npy", {4, 1}, {0, 1, 2, 3});
  save<int64_t>(dir, "y.npy", {4}, {0, 1, 0, 1});
}

std::string folder_error(const TempDir& dir) {
  return error_of([&] { read_npy_folder(dir.path()); });
}

TEST(NpyFolderTest, ShapeMismatchesNameBothFiles) {
  TempDir dir;
  write_valid_folder(dir);
  EXPECT_NO_THROW(read_npy_folder(dir.path()));
  save<int64_t>(dir, "y.npy", {3}, {0, 1, 0});
  EXPECT_CONTAINS(folder_error(dir), dir / "y.npy: has 3 entries, but x.npy has 4 rows");

  write_valid_folder(dir);
  save_mask(dir, "val_idx.npy", {1, 0, 1});
  EXPECT_CONTAINS(folder_error(dir), dir / "val_idx.npy: has 3 mask entries, but x.npy has 4 rows");
  fs::remove(dir / "val_idx.npy");

  write_valid_folder(dir);
  save<float>(dir, "edge_attr.npy", {2, 1}, {0, 1});
  EXPECT_CONTAINS(folder_error(dir), dir / "edge_attr.npy: has 2 rows, but edge_index.npy has 3 edges");
  fs::remove(dir / "edge_attr.npy");

  save<int64_t>(dir, "edge_time.npy", {4}, {0, 1, 2, 3});
  EXPECT_CONTAINS(folder_error(dir), dir / "edge_time.npy: has 4 entries, but edge_index.npy has 3 edges");
  fs::remove(dir / "edge_time.npy");

  save<int64_t>(dir, "edge_index.npy", {3, 2}, {0, 1, 2, 1, 2, 3});
  EXPECT_CONTAINS(folder_error(dir), dir / "edge_index.npy: shape (3, 2) is not (2, num_edges)");

  write_valid_folder(dir);
  save<float>(dir, "x.npy", {4}, {0, 1, 2, 3});
  EXPECT_CONTAINS(folder_error(dir), dir / "x.npy: shape (4,) is not (num_nodes, num_features)");
}

TEST(NpyFolderTest, OutOfRangeIdsNameTheFile) {
  TempDir dir;
  write_valid_folder(dir);
  save<int64_t>(dir, "edge_index.npy", {2, 2}, {0, 9, 1, 2});
  EXPECT_CONTAINS(folder_error(dir), dir / "edge_index.npy: edge 1 (9 -> 2) has node id 9, out of range: x.npy has 4 rows");

  save<int64_t>(dir, "edge_index.npy", {2, 2}, {0, 1, -1, 2});
  EXPECT_CONTAINS(folder_error(dir), dir / "edge_index.npy: edge 0 has a negative node id -1");

  write_valid_folder(dir);
  save<int64_t>(dir, "val_edge_index.npy", {2, 1}, {0, 4});
  EXPECT_CONTAINS(folder_error(dir), dir / "val_edge_index.npy: edge 0 (0 -> 4) has node id 4");
  fs::remove(dir / "val_edge_index.npy");

  save<int64_t>(dir, "test_idx.npy", {2}, {1, 4});
  EXPECT_CONTAINS(folder_error(dir), dir / "test_idx.npy: entry 1 = 4 is not a node id in [0, 4)");
}

TEST(NpyFolderTest, BadValuesAndDtypesNameTheFile) {
  TempDir dir;
  write_valid_folder(dir);
  save<int64_t>(dir, "y.npy", {4}, {0, -2, 1, -1});
  EXPECT_CONTAINS(folder_error(dir), dir / "y.npy: label -2 of node 1 is negative");

  write_valid_folder(dir);
  save<float>(dir, "y.npy", {4}, {0, 1, 0, 1});
  EXPECT_CONTAINS(folder_error(dir), dir / "y.npy: dtype float32 is not supported here (expected int64 or int32)");

  write_valid_folder(dir);
  save<int64_t>(dir, "x.npy", {4, 1}, {0, 1, 2, 3});
  EXPECT_CONTAINS(folder_error(dir), dir / "x.npy: dtype int64 is not supported here (expected float32 or float64)");

  write_valid_folder(dir);
  save<double>(dir, "edge_index.npy", {2, 1}, {0, 1});
  EXPECT_CONTAINS(folder_error(dir), dir / "edge_index.npy: dtype float64");

  write_valid_folder(dir);
  save<uint8_t>(dir, "train_idx.npy", {2}, {0, 1});
  EXPECT_CONTAINS(folder_error(dir), dir / "train_idx.npy: dtype uint8 is not supported here");
}

TEST(NpyFolderTest, TypesNeedTypesJsonAndMustBeInRange) {
  TempDir dir;
  write_valid_folder(dir);
  save<int32_t>(dir, "node_type.npy", {4}, {0, 1, 0, 1});
  EXPECT_CONTAINS(folder_error(dir), dir / "node_type.npy: needs types.json");

  write_text(dir / "types.json", R"({"node_types": ["a"], "edge_types": []})");
  EXPECT_CONTAINS(folder_error(dir), dir / "node_type.npy: entry 1 = 1, but types.json names 1 node types");

  // Edges 0 -> 1 -> 2 -> 3 over nodes of types a, b, a, b.
  write_text(dir / "types.json", R"({"node_types": ["a", "b"], "edge_types": [["a", "r", "b"], ["b", "s", "a"]]})");
  EXPECT_CONTAINS(folder_error(dir), dir / "edge_type.npy: missing, but types.json declares edge types");

  save<int64_t>(dir, "edge_type.npy", {3}, {0, 1, 0});
  Dataset d = read_npy_folder(dir.path());
  EXPECT_EQ(d.edges.type, (std::vector<int32_t>{0, 1, 0}));
  EXPECT_EQ(d.node_type_names, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(d.reverse_edge_type.empty());

  write_text(dir / "types.json",
             R"({"node_types": ["a", "b"], "edge_types": [["a", "r", "b"], ["b", "s", "a"]], "reverse_edge_types": [1, 0]})");
  EXPECT_EQ(read_npy_folder(dir.path()).reverse_edge_type, (std::vector<int32_t>{1, 0}));
  write_text(dir / "types.json",
             R"({"node_types": ["a", "b"], "edge_types": [["a", "r", "b"], ["b", "s", "a"]], "reverse_edge_types": [0, -1]})");
  EXPECT_CONTAINS(folder_error(dir), "reverse_edge_type[0] = 0 is not an edge type that mirrors it");
  // x.npy has 1 column: type a's nodes use it, b's none.
  write_text(dir / "types.json",
             R"({"node_types": ["a", "b"], "edge_types": [["a", "r", "b"], ["b", "s", "a"]], "feature_dims": [1, 0]})");
  EXPECT_EQ(read_npy_folder(dir.path()).node_type_feature_dim, (std::vector<int64_t>{1, 0}));
  write_text(dir / "types.json",
             R"({"node_types": ["a", "b"], "edge_types": [["a", "r", "b"], ["b", "s", "a"]], "feature_dims": [2, 1]})");
  EXPECT_CONTAINS(folder_error(dir), "node_type_feature_dim[0] = 2 is outside [0, feature_dim = 1]");
  write_text(dir / "types.json",
             R"({"node_types": ["a", "b"], "edge_types": [["a", "r", "b"], ["b", "s", "a"]], "feature_dims": [1]})");
  EXPECT_CONTAINS(folder_error(dir), "node_type_feature_dim has 1 entries");

  write_text(dir / "types.json", R"({"node_types": ["a", "b"], "edge_types": [["a", "r"]]})");
  EXPECT_CONTAINS(folder_error(dir), dir / "types.json: edge type [\"a\",\"r\"] is not [src_type, relation, dst_type]");
  write_text(dir / "types.json", R"({"node_types": ["a", "b"], )");
  EXPECT_CONTAINS(folder_error(dir), dir / "types.json: [json.exception.parse_error");
  write_text(dir / "types.json", R"({"nodes": ["a", "b"]})");
  EXPECT_CONTAINS(folder_error(dir), dir / "types.json: unknown key \"nodes\"");
}

TEST(NpyFolderTest, EdgeEndpointsMustHaveTheNodeTypesOfTheirEdgeType) {
  TempDir dir;
  write_valid_folder(dir);  // edges 0 -> 1 -> 2 -> 3
  save<int32_t>(dir, "node_type.npy", {4}, {0, 1, 0, 1});
  write_text(dir / "types.json", R"({"node_types": ["a", "b"], "edge_types": [["a", "r", "b"], ["b", "s", "a"]]})");
  save<int32_t>(dir, "edge_type.npy", {3}, {0, 0, 0});
  EXPECT_CONTAINS(folder_error(dir), dir / "edge_type.npy: edge 1 has type 0 (a, r, b), but its src node 1 has type 'b' in node_type.npy");
  save<int32_t>(dir, "edge_type.npy", {3}, {0, 1, 1});
  EXPECT_CONTAINS(folder_error(dir), dir / "edge_type.npy: edge 2 has type 1 (b, s, a), but its src node 2 has type 'a'");

  save<int32_t>(dir, "edge_type.npy", {3}, {0, 1, 0});
  save<int64_t>(dir, "test_edge_index.npy", {2, 1}, {0, 2});
  save<int32_t>(dir, "test_edge_type.npy", {1}, {0});
  EXPECT_CONTAINS(folder_error(dir), dir / "test_edge_type.npy: edge 0 has type 0 (a, r, b), but its dst node 2 has type 'a'");
  save<int32_t>(dir, "test_edge_type.npy", {1}, {1});
  EXPECT_CONTAINS(folder_error(dir), dir / "test_edge_type.npy: edge 0 has type 1 (b, s, a), but its src node 0 has type 'a'");
  save<int64_t>(dir, "test_edge_index.npy", {2, 1}, {3, 2});
  EXPECT_EQ(read_npy_folder(dir.path()).test_edges.type, std::vector<int32_t>{1});
}

// Arrays large enough that converting ones cross several of read_npy_as's bounded chunks,
// read straight into (or converted into) the dataset: the values must come out in place.
TEST(NpyFolderTest, LargeArraysReadWholeAndInOrder) {
  TempDir dir;
  const int64_t num_edges = 700000, num_nodes = 1100000;
  std::vector<int32_t> narrow(static_cast<size_t>(2 * num_edges));
  for (int64_t i = 0; i < num_edges; ++i) {
    narrow[i] = static_cast<int32_t>(i);
    narrow[num_edges + i] = static_cast<int32_t>((i * 7919) % num_nodes);
  }
  std::vector<double> x(static_cast<size_t>(num_nodes));
  for (int64_t i = 0; i < num_nodes; ++i) x[i] = 0.5 * static_cast<double>(i);
  save<int32_t>(dir, "edge_index.npy", {2, num_edges}, narrow);
  save<double>(dir, "x.npy", {num_nodes, 1}, x);
  Dataset d = read_npy_folder(dir.path());
  ASSERT_EQ(d.num_edges(), num_edges);
  for (int64_t i = 0; i < num_edges; ++i) {
    ASSERT_EQ(d.edges.src[i], i);
    ASSERT_EQ(d.edges.dst[i], (i * 7919) % num_nodes) << i;
  }
  ASSERT_EQ(d.x.size(), static_cast<size_t>(num_nodes));
  for (int64_t i = 0; i < num_nodes; ++i) ASSERT_EQ(d.x[i], static_cast<float>(x[i])) << i;

  std::vector<int64_t> wide(narrow.begin(), narrow.end());
  save<int64_t>(dir, "edge_index.npy", {2, num_edges}, wide);
  Dataset again = read_npy_folder(dir.path());
  EXPECT_TRUE(again.edges.src == d.edges.src);
  EXPECT_TRUE(again.edges.dst == d.edges.dst);
}

TEST(NpyFolderTest, MissingEdgeIndexOrFolderIsNamed) {
  TempDir dir;
  save<float>(dir, "x.npy", {4, 1}, {0, 1, 2, 3});
  EXPECT_CONTAINS(folder_error(dir), dir / "edge_index.npy: missing");
  EXPECT_CONTAINS(error_of([&] { read_npy_folder(dir / "absent"); }), dir / "absent: not a folder");
}

TEST(NpyFolderTest, UnwritableFolderIsNamed) {
  TempDir dir;
  write_text(dir / "file", "in the way");
  EXPECT_CONTAINS(error_of([&] { write_npy_folder(hetero_dataset(), dir / "file/out"); }),
                  dir / "file/out: cannot create the folder");
  EXPECT_CONTAINS(error_of([&] { write_npy_folder(hetero_dataset(), dir / "file"); }),
                  dir / "file: cannot create the folder");
}

// ---------------------------------------------------------------------------------------
// Dispatch

TEST(ReaderTest, DispatchesOnFormatName) {
  TempDir dir;
  write_text(dir / "g.txt", "0 1\n");
  EXPECT_EQ(read_dataset("edgelist", dir / "g.txt").num_nodes, 2);
  write_npy_folder(hetero_dataset(), dir / "npy");
  EXPECT_EQ(read_dataset("npy", dir / "npy").num_nodes, 6);
  write_triples(dir, "a\tr\tb\n", "", "");
  EXPECT_EQ(read_dataset("triples", dir.path()).num_nodes, 2);
  ReadOptions options;
  options.split_seed = 3;
  Dataset cora = read_dataset("linqs", testing::dataset_path("cora"), options);
  EXPECT_EQ(cora.train_idx, read_linqs(testing::dataset_path("cora"), options).train_idx);
}

TEST(ReaderTest, UnknownFormatIsAUsageErrorListingTheFormats) {
  try {
    read_dataset("csv", "whatever");
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_CONTAINS(e.what(), "unknown dataset format 'csv'");
    EXPECT_CONTAINS(e.what(), "linqs, npy, edgelist, triples, movielens, movielens100k, ntriples");
  }
}

// ---------------------------------------------------------------------------------------
// The corpus of broken inputs (tests/corpus/readers): every entry must be rejected with an
// Error naming it. *.npy files go to read_npy; other entries name their reader by prefix.

std::function<void(const std::string&)> reader_for(const std::string& name) {
  auto starts_with = [&](const char* prefix) { return name.rfind(prefix, 0) == 0; };
  if (name.size() > 4 && name.substr(name.size() - 4) == ".npy") return [](const std::string& p) { read_npy(p); };
  if (starts_with("edgelist_")) return [](const std::string& p) { read_edgelist(p); };
  if (starts_with("linqs_")) return [](const std::string& p) { read_linqs(p); };
  if (starts_with("triples_")) return [](const std::string& p) { read_triples(p); };
  if (starts_with("ntriples_")) return [](const std::string& p) { read_ntriples(p); };
  if (starts_with("npy_")) return [](const std::string& p) { read_npy_folder(p); };
  if (starts_with("movielens_")) return [](const std::string& p) { read_movielens(p); };
  return nullptr;
}

// Why each entry must fail: a corpus file rejected for another reason (say, a typo that
// makes it unreadable) would otherwise pass unnoticed.
const std::map<std::string, std::string> kCorpusReasons = {
    {"movielens_bad_header", "ratings.csv:1: expected the header 'userId,movieId,rating,timestamp'"},
    {"movielens_bad_rating", "ratings.csv:2: rating '7.5' is not a number in [0, 5]"},
    {"movielens_bad_timestamp", "ratings.csv:2: timestamp 'yesterday' is not an integer"},
    {"movielens_no_ratings", "ratings.csv"},
    {"movielens_short_line", "ratings.csv:2: expected 4 comma-separated fields"},
    {"movielens_unknown_movie", "ratings.csv:3: movie 3 is not in"},
    {"movielens_unterminated_quote", "movies.csv:2: unterminated quote"},
    {"bad_magic.npy", "not a .npy file"},
    {"big_endian.npy", "big-endian dtype '>f4'"},
    {"empty.npy", "too short to be a .npy file"},
    {"fortran.npy", "Fortran-order arrays are not supported"},
    {"header_past_end.npy", "truncated .npy header"},
    {"huge_shape.npy", "is too large"},
    {"negative_dim.npy", "non-negative dimension"},
    {"no_shape.npy", "the header has no 'shape'"},
    {"not_a_dict.npy", "expected '{'"},
    {"object.npy", "dtype '|O' is not supported"},
    {"structured.npy", "structured dtypes are not supported"},
    {"trailing_garbage.npy", "1 unexpected bytes after the data"},
    {"truncated.npy", "truncated: shape (3,)"},
    {"unicode.npy", "dtype '<U10' is not supported"},
    {"unterminated_header.npy", "expected '}'"},
    {"version_4.npy", "unsupported .npy format version 4.0"},
    {"edgelist_bad_token.txt", "edgelist_bad_token.txt:3: 'a' is not a node id"},
    {"edgelist_float.txt", "edgelist_float.txt:2: '2.5' is not a node id"},
    {"edgelist_huge_id.txt", "edgelist_huge_id.txt:4: node id 9000000000000000 is far beyond the number of edges (5)"},
    {"edgelist_int64_max.txt", "edgelist_int64_max.txt:2: node id 9223372036854775807 is far beyond the number of edges (2)"},
    {"edgelist_negative.txt", "edgelist_negative.txt:2: negative node id -2"},
    {"edgelist_one_column.txt", "edgelist_one_column.txt:3: expected 2 columns (src dst), found 1"},
    {"edgelist_only_comments.txt", "edgelist_only_comments.txt: no edges"},
    {"edgelist_three_columns.txt", "edgelist_three_columns.txt:1: expected 2 columns (src dst), found 3"},
    {"linqs_bad_cites", "c.cites:2: expected 2 paper ids"},
    {"linqs_bad_feature", "f.content:2: feature 1 ('1e') is not a number"},
    {"linqs_nan_feature", "n.content:2: feature 1 is 'nan': features must be finite"},
    {"linqs_duplicate_id", "d.content:3: paper 'a' already appears on line 1"},
    {"linqs_no_cites", "n.cites: cannot open"},
    {"linqs_no_content", "no .content file"},
    {"linqs_ragged", "r.content:3: has 1 features, the first paper has 2"},
    {"npy_bad_label", "y.npy: label -5 of node 1 is negative"},
    {"npy_huge_label", "y.npy: label 9223372036854775807 of node 1 is over the largest class index, 16777215"},
    {"npy_edge_index_1d", "edge_index.npy: shape (2,) is not (2, num_edges)"},
    {"npy_edge_out_of_range", "edge_index.npy: edge 1 (1 -> 5) has node id 5, out of range"},
    {"npy_edge_type_mismatch", "edge_type.npy: edge 1 has type 0 (author, writes, paper), but its dst node 0 has type 'author'"},
    {"npy_fortran_x", "x.npy: Fortran-order arrays are not supported"},
    {"npy_inf_feature", "x.npy: row 1, column 0 is infinite: features must be finite"},
    {"npy_mask_length", "train_idx.npy: has 2 mask entries, but x.npy has 3 rows"},
    {"npy_no_edge_index", "edge_index.npy: missing"},
    {"npy_shape_mismatch", "y.npy: has 2 entries, but x.npy has 3 rows"},
    {"npy_types_without_json", "node_type.npy: needs types.json"},
    {"ntriples_bad_gzip", "g.nt.gz: not a readable gzip file"},
    {"ntriples_literal_label", "testSet.tsv:2: a literal where an entity is expected: 'http://x/b' is a literal"},
    {"ntriples_literal_predicate", "g.nt:1: a literal where an entity is expected: the predicate \"p\" must be an IRI"},
    {"ntriples_literal_subject", "g.nt:2: a literal where an entity is expected: the subject \"lit\""},
    {"ntriples_malformed", "g.nt:4: unterminated literal in the object"},
    {"ntriples_no_dot", "g.nt:1: expected '.' after the object"},
    {"ntriples_no_graph", "expected exactly one N-Triples file (*.nt or *.nt.gz), found 0"},
    {"ntriples_unknown_entity", "testSet.tsv:2: entity 'http://x/b' does not occur in"},
    {"triples_empty_field", "valid.txt:1: empty head"},
    {"triples_missing_test", "test.txt: cannot open"},
    {"triples_two_fields", "train.txt:2: expected 3 tab-separated fields (head, relation, tail), found 2"},
};

TEST(CorpusTest, EveryBrokenInputIsRejectedWithAnErrorNamingIt) {
  std::set<std::string> seen;
  for (const auto& entry : fs::directory_iterator(testing::corpus_path("readers"))) {
    std::string name = entry.path().filename().string();
    if (name == "README.md") continue;
    seen.insert(name);
    auto reason = kCorpusReasons.find(name);
    auto read = reader_for(name);
    if (reason == kCorpusReasons.end() || !read) {
      ADD_FAILURE() << name << ": not in kCorpusReasons or no reader for its name (see the corpus README)";
      continue;
    }
    std::string message = error_of([&] { read(entry.path().string()); });
    EXPECT_CONTAINS(message, entry.path().string());
    EXPECT_CONTAINS(message, reason->second);
  }
  for (const auto& [name, reason] : kCorpusReasons) EXPECT_TRUE(seen.count(name)) << name << " is missing from the corpus";
}

}  // namespace
}  // namespace partita
