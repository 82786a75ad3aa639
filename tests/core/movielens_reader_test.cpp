// The MovieLens reader (format: movielens): users and movies as node types, `rates` and
// its reverse `rated_by` with the rating as attribute and the timestamp as edge time,
// genres multi-hot, users a constant row; a small corpus by hand, then the shared
// ml-latest-small partitioned into 2 parts with each node type balanced. (Broken inputs:
// tests/corpus/readers/movielens_*, CorpusTest.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "partitioner/partition.h"
#include "partitioner/partition_format.h"
#include "partitioner/readers.h"
#include "test_util.h"

namespace partita {
namespace {

namespace fs = std::filesystem;

TEST(MovieLensReaderTest, UsersMoviesRatingsAndGenres) {
  testing::TempDir tmp;
  fs::create_directories(tmp / "ml");
  std::ofstream(tmp / "ml/movies.csv") << "movieId,title,genres\r\n"
                                          "1,Toy Story (1995),Adventure|Animation|Comedy\r\n"
                                          "5,\"American President, The (1995)\",Comedy|Drama|Romance\r\n"
                                          "9,\"The \"\"Quoted\"\" (2000)\",(no genres listed)\r\n";
  std::ofstream(tmp / "ml/ratings.csv") << "userId,movieId,rating,timestamp\n"
                                           "7,5,4.5,964982703\n"
                                           "3,1,0.5,964981247\n"
                                           "7,1,3.0,964982224\n";
  const Dataset d = read_dataset("movielens", tmp / "ml");
  EXPECT_EQ(d.name, "ml");
  // Users 3 and 7 (nodes 0, 1), then movies 1, 5, 9 (nodes 2, 3, 4), the unrated one too.
  ASSERT_EQ(d.num_nodes, 5);
  EXPECT_EQ(d.node_type_names, (std::vector<std::string>{"user", "movie"}));
  EXPECT_EQ(d.node_type, (std::vector<int32_t>{0, 0, 1, 1, 1}));
  EXPECT_EQ(d.node_names[1], "user 7");
  EXPECT_EQ(d.node_names[3], "movie 5");
  ASSERT_EQ(d.edge_types.size(), 2u);
  EXPECT_EQ(d.edge_types[0].relation, "rates");
  EXPECT_EQ(d.edge_types[1].relation, "rated_by");
  // Genres sorted: (no genres listed), Adventure, Animation, Comedy, Drama, Romance; then
  // the year's 12 columns (11 decades, no year); then the users' column.
  ASSERT_EQ(d.feature_dim, 6 + 12 + 1);
  const auto row = [&](int64_t node) {
    return std::vector<float>(d.x.begin() + node * 19, d.x.begin() + (node + 1) * 19);
  };
  // Decade columns: before 1930, 1930s, ..., 1990s (7), 2000s (8), 2010s (9), 2020 on (10).
  EXPECT_EQ(row(0), (std::vector<float>{0, 0, 0, 0, 0, 0, /*year*/ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(row(1), row(0));
  EXPECT_EQ(row(2), (std::vector<float>{0, 1, 1, 1, 0, 0, /*1995*/ 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0}));
  EXPECT_EQ(row(3), (std::vector<float>{0, 0, 0, 1, 1, 1, /*1995*/ 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0}));
  EXPECT_EQ(row(4), (std::vector<float>{1, 0, 0, 0, 0, 0, /*2000*/ 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}));
  // Each rating both ways, in file order, with its rating and time.
  EXPECT_EQ(d.edges.src, (std::vector<int64_t>{1, 3, 0, 2, 1, 2}));
  EXPECT_EQ(d.edges.dst, (std::vector<int64_t>{3, 1, 2, 0, 2, 1}));
  EXPECT_EQ(d.edges.type, (std::vector<int32_t>{0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(d.edge_feature_dim, 1);
  EXPECT_EQ(d.edge_attr, (std::vector<float>{4.5f, 4.5f, 0.5f, 0.5f, 3.0f, 3.0f}));
  EXPECT_EQ(d.edge_time, (std::vector<int64_t>{964982703, 964982703, 964981247, 964981247, 964982224, 964982224}));
  EXPECT_TRUE(d.y.empty());
}

TEST(MovieLensReaderTest, TheSharedDataPartitionsInTwoWithEachTypeBalanced) {
  const Dataset d = read_movielens(testing::dataset_path("movielens-small"));
  EXPECT_EQ(d.num_nodes, 610 + 9742);
  EXPECT_EQ(d.num_edges(), 2 * 100836);
  EXPECT_EQ(d.feature_dim, 33);  // 20 genre labels, 12 year columns and the users' column
  // 13 of the 9,742 titles have no year ("Black Mirror", "Death Note: Desu nôto (2006–2007)").
  int64_t no_year = 0;
  for (int64_t node = 610; node < d.num_nodes; ++node) no_year += d.x[static_cast<size_t>(node * 33 + 20 + 11)] == 1.0f;
  EXPECT_EQ(no_year, 13);
  testing::TempDir tmp;
  PartitionOptions options;
  options.num_parts = 2;
  const PartitionMeta meta = partition_dataset(d, options, tmp / "parts");
  EXPECT_TRUE(meta.is_hetero);
  EXPECT_TRUE(meta.has_edge_time);
  EXPECT_EQ(meta.edge_feature_dim, 1);
  const PartitionFolder folder(tmp / "parts");
  for (int32_t type : {0, 1}) {
    const int64_t total = type == 0 ? 610 : 9742;
    for (int p = 0; p < 2; ++p) {
      const PartitionData data = folder.load_part(p);
      int64_t count = 0;
      for (int32_t t : data.node_type->as<int32_t>()) count += t == type;
      // METIS's default tolerance is 3% per constraint; allow a little more.
      EXPECT_LE(count, total / 2 * 105 / 100) << "type " << type << ", part " << p;
      EXPECT_GE(count, total / 2 * 95 / 100) << "type " << type << ", part " << p;
    }
  }
}

// The release year is read off the title's end; any other title has none (its no-year
// column set), so no title is an error: a title is free text.
TEST(MovieLensReaderTest, TheReleaseYearIsTheTitlesFinalFourDigitsInParentheses) {
  EXPECT_EQ(movielens_release_year("Toy Story (1995)"), 1995);
  EXPECT_EQ(movielens_release_year("\"American President, The (1995)\""), 1995);  // quoted field
  EXPECT_EQ(movielens_release_year("Babylon 5 (1994) "), 1994);                  // trailing spaces
  EXPECT_EQ(movielens_release_year("\"Babylon 5 (1994)  \""), 1994);
  EXPECT_EQ(movielens_release_year("(2018)"), 2018);
  EXPECT_EQ(movielens_release_year("1984 (1956)"), 1956);  // the final one, not the first
  // No year: none at the end, a range, not four digits, a quote after it, year 0.
  EXPECT_EQ(movielens_release_year("Black Mirror"), 0);
  EXPECT_EQ(movielens_release_year("Death Note: Desu n\xc3\xb4to (2006\xe2\x80\x93" "2007)"), 0);
  EXPECT_EQ(movielens_release_year("Movie (95)"), 0);
  EXPECT_EQ(movielens_release_year("Movie (19950)"), 0);
  EXPECT_EQ(movielens_release_year("Movie (19a5)"), 0);
  EXPECT_EQ(movielens_release_year("Movie (1995"), 0);
  EXPECT_EQ(movielens_release_year("\"Movie (1995)\"\"\""), 0);  // the title ends in a quote
  EXPECT_EQ(movielens_release_year("Movie (0000)"), 0);
  EXPECT_EQ(movielens_release_year(""), 0);
  EXPECT_EQ(movielens_release_year("\""), 0);
  EXPECT_EQ(movielens_release_year(")"), 0);
}

TEST(MovieLensReaderTest, TheYearColumnsAreItsDecadeOrNoYear) {
  std::vector<float> c(kMovieLensYearColumns, 7.0f);  // every column is written
  movielens_year_columns(0, c.data());
  EXPECT_EQ(c, (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}));
  movielens_year_columns(1902, c.data());  // before 1930
  EXPECT_EQ(c, (std::vector<float>{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  movielens_year_columns(1929, c.data());
  EXPECT_EQ(c, (std::vector<float>{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  movielens_year_columns(1930, c.data());  // a decade's first year
  EXPECT_EQ(c, (std::vector<float>{0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  movielens_year_columns(2019, c.data());
  EXPECT_EQ(c, (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0}));
  movielens_year_columns(9999, c.data());  // 2020 on
  EXPECT_EQ(c, (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0}));
}

TEST(MovieLensReaderTest, TooManyGenresAreNamedBeforeTheFeaturesAreSized) {
  testing::TempDir tmp;
  fs::create_directories(tmp / "ml");
  {
    std::ofstream movies(tmp / "ml/movies.csv");
    movies << "movieId,title,genres\n";
    for (int m = 0; m < 1025; ++m) movies << m << ",M,g" << m << "\n";
  }
  std::ofstream(tmp / "ml/ratings.csv") << "userId,movieId,rating,timestamp\n1,1,4.0,1\n";
  try {
    read_dataset("movielens", tmp / "ml");
    ADD_FAILURE() << "1025 genres were read";
  } catch (const std::exception& e) {
    EXPECT_CONTAINS(e.what(), "movies.csv: 1025 distinct genres; at most 1024");
  }
}

}  // namespace
}  // namespace partita
