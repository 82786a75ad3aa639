#include <gtest/gtest.h>

#include "base/error.h"
#include "partitioner/dataset.h"

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

TEST(DatasetTest, EmptyGraphIsRejected) {
  Dataset d;
  d.name = "empty";
  EXPECT_THROW(d.validate(), Error);
}

}  // namespace
}  // namespace partita
