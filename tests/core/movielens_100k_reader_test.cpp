// The MovieLens 100K reader (format: movielens100k): GroupLens' u.data, u.item and
// u.genre read into the same graph as ml-latest-small's (users, movies, both edge types of
// each rating, genres multi-hot over the sorted names, the release year's columns), and its
// bad lines each an error naming the file and line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "expect_error.h"
#include "partitioner/readers.h"
#include "test_util.h"

namespace partita {
namespace {

namespace fs = std::filesystem;

// A 100K-shaped folder: 3 genres, movies 1, 2, 4; ratings by users 5 and 2.
void write_100k(const std::string& dir, const std::string& item_extra = "", const std::string& data_extra = "") {
  fs::create_directories(dir);
  std::ofstream(dir + "/u.genre") << "unknown|0\nAction|1\nComedy|2\n\n";
  std::ofstream(dir + "/u.item") << "1|Toy Story (1995)|01-Jan-1995||http://us.imdb.com/M/title-exact?Toy%20Story%20(1995)|0|0|1\n"
                                    "2|GoldenEye (1995)|01-Jan-1995||http://us.imdb.com/|0|1|0\n"
                                    "4|Caf\xe9 (1931)|||http://us.imdb.com/|1|0|0\n"
                                 << item_extra;
  std::ofstream(dir + "/u.data") << "5\t2\t3\t881250949\n"
                                    "2\t1\t5\t881250950\n"
                                    "5\t4\t1\t881250951\n"
                                 << data_extra;
}

TEST(MovieLens100kReaderTest, UsersMoviesRatingsGenresAndYears) {
  testing::TempDir tmp;
  write_100k(tmp / "ml-100k");
  const Dataset d = read_dataset("movielens100k", tmp / "ml-100k");
  EXPECT_EQ(d.name, "ml-100k");
  // Users 2, 5 (nodes 0, 1), then movies 1, 2, 4 (nodes 2, 3, 4).
  ASSERT_EQ(d.num_nodes, 5);
  EXPECT_EQ(d.node_type_names, (std::vector<std::string>{"user", "movie"}));
  EXPECT_EQ(d.node_type, (std::vector<int32_t>{0, 0, 1, 1, 1}));
  EXPECT_EQ(d.node_names, (std::vector<std::string>{"user 2", "user 5", "movie 1", "movie 2", "movie 4"}));
  // Genres sorted: Action, Comedy, unknown; then the year's 12 columns; then the users' column.
  ASSERT_EQ(d.feature_dim, 3 + 12 + 1);
  const auto row = [&](int64_t node) {
    return std::vector<float>(d.x.begin() + node * 16, d.x.begin() + (node + 1) * 16);
  };
  EXPECT_EQ(row(0), (std::vector<float>{0, 0, 0, /*year*/ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(row(2), (std::vector<float>{0, 1, 0, /*1995*/ 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0}));
  EXPECT_EQ(row(3), (std::vector<float>{1, 0, 0, /*1995*/ 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0}));
  // No release date: the year from the title (the 1930s).
  EXPECT_EQ(row(4), (std::vector<float>{0, 0, 1, /*1931*/ 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(d.edges.src, (std::vector<int64_t>{1, 3, 0, 2, 1, 4}));
  EXPECT_EQ(d.edges.dst, (std::vector<int64_t>{3, 1, 2, 0, 4, 1}));
  EXPECT_EQ(d.edges.type, (std::vector<int32_t>{0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(d.edge_attr, (std::vector<float>{3, 3, 5, 5, 1, 1}));
  EXPECT_EQ(d.edge_time, (std::vector<int64_t>{881250949, 881250949, 881250950, 881250950, 881250951, 881250951}));
  EXPECT_EQ(d.reverse_edge_type, (std::vector<int32_t>{1, 0}));
}

TEST(MovieLens100kReaderTest, BadLinesNameTheFileAndLine) {
  testing::TempDir tmp;
  write_100k(tmp / "a", "", "5\t3\t4\t881250952\n");
  EXPECT_THROW_CONTAINS(read_movielens_100k(tmp / "a"), "u.data:4: item 3 is not in " + (tmp / "a") + "/u.item");
  write_100k(tmp / "b", "", "5\t1\t6\t881250952\n");
  EXPECT_THROW_CONTAINS(read_movielens_100k(tmp / "b"), "u.data:4: rating '6' is not a number in [0, 5]");
  write_100k(tmp / "c", "", "5 1\n");
  EXPECT_THROW_CONTAINS(read_movielens_100k(tmp / "c"), "u.data:4: expected 4 tab-separated fields");
  write_100k(tmp / "d", "7|Extra (1999)|01-Jan-1999||url|0|2|0\n");
  EXPECT_THROW_CONTAINS(read_movielens_100k(tmp / "d"), "u.item:4: the flag of genre Action is '2', not 0 or 1");
  write_100k(tmp / "e", "8|Short|01-Jan-1999||url|0|0\n");
  EXPECT_THROW_CONTAINS(read_movielens_100k(tmp / "e"), "u.item:4: expected 8 '|'-separated fields");
  write_100k(tmp / "f", "1|Twice (1995)|||url|0|0|1\n");
  EXPECT_THROW_CONTAINS(read_movielens_100k(tmp / "f"), "u.item:4: movie 1 is listed twice");
  write_100k(tmp / "g");
  std::ofstream(tmp / "g/u.genre") << "unknown|0\nAction|2\n";
  EXPECT_THROW_CONTAINS(read_movielens_100k(tmp / "g"), "u.genre:2: genre index 2, expected 1");
  fs::remove(tmp / "g/u.genre");
  EXPECT_THROW_CONTAINS(read_movielens_100k(tmp / "g"), "u.genre");
}

}  // namespace
}  // namespace partita
