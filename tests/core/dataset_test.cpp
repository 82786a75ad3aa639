#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "partitioner/dataset.h"
#include "test_util.h"

namespace partita {
namespace {

Dataset triangle() {
  Dataset d;
  d.name = "triangle";
  d.num_nodes = 3;
  d.edges.push_back(0, 1);
  d.edges.push_back(1, 2);
  d.edges.push_back(2, 0);
  return d;
}

TEST(DatasetTest, ValidGraphPasses) { EXPECT_NO_THROW(triangle().validate()); }

TEST(DatasetTest, EdgeOutOfRangeIsNamed) {
  Dataset d = triangle();
  d.edges.push_back(0, 7);
  try {
    d.validate();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("edges edge 3 (0 -> 7)"), std::string::npos) << e.what();
  }
}

TEST(DatasetTest, FeatureRowsMustMatchNodes) {
  Dataset d = triangle();
  d.feature_dim = 2;
  d.x.assign(4, 0.f);
  EXPECT_THROW(d.validate(), Error);
}

// Authors 0 and 1 write papers 2 and 3; papers cite papers.
Dataset authors_and_papers() {
  Dataset d;
  d.name = "typed";
  d.num_nodes = 4;
  d.node_type_names = {"author", "paper"};
  d.node_type = {0, 0, 1, 1};
  d.edge_types = {{"author", "writes", "paper"}, {"paper", "cites", "paper"}};
  d.edges.src = {0, 1, 2};
  d.edges.dst = {2, 3, 3};
  d.edges.type = {0, 0, 1};
  return d;
}

std::string validate_error(const Dataset& d) {
  try {
    d.validate();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an error";
  return "";
}

TEST(DatasetTest, EdgeEndpointsMustHaveTheNodeTypesOfTheirEdgeType) {
  EXPECT_NO_THROW(authors_and_papers().validate());

  Dataset d = authors_and_papers();
  d.edges.type[2] = 0;  // paper 2 -> paper 3 as (author, writes, paper)
  EXPECT_CONTAINS(validate_error(d), "dataset 'typed': edges edge 2 has edge type 0 (author, writes, paper), "
                                     "but its src node 2 has node type 'paper'");

  d = authors_and_papers();
  d.edges.dst[1] = 0;  // author 1 -> author 0 as (author, writes, paper)
  EXPECT_CONTAINS(validate_error(d), "edges edge 1 has edge type 0 (author, writes, paper), "
                                     "but its dst node 0 has node type 'author'");

  d = authors_and_papers();
  d.test_edges.src = {3};
  d.test_edges.dst = {1};
  d.test_edges.type = {1};
  EXPECT_CONTAINS(validate_error(d), "test_edges edge 0 has edge type 1 (paper, cites, paper), "
                                     "but its dst node 1 has node type 'author'");
  d.test_edges.dst = {2};
  EXPECT_NO_THROW(d.validate());
  // Held-out edges of a typed graph need their types as its edges do (the partition folder
  // has test_edge_type.bin beside them).
  d.test_edges.type.clear();
  EXPECT_CONTAINS(validate_error(d), "edge_types are declared but test_edges carry no type");
}

TEST(DatasetTest, EmptyGraphIsRejected) {
  Dataset d;
  d.name = "empty";
  EXPECT_THROW(d.validate(), Error);
}

}  // namespace
}  // namespace partita
