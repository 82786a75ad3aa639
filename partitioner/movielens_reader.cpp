// MovieLens (ml-latest-small and the other ml-latest releases: ratings.csv and movies.csv;
// ml-100k: u.data, u.item and u.genre), a bipartite, heterogeneous, temporal graph
// (readers.h read_movielens, read_movielens_100k).
#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>
#include <unordered_map>

#include "base/error.h"
#include "partitioner/reader_util.h"
#include "partitioner/readers.h"

namespace partita {

namespace {

constexpr const char* kUsers = "user";
constexpr const char* kMovies = "movie";

// Splits a CSV line on commas outside double quotes ("" inside quotes is a quote).
// Returns false for an unterminated quote.
bool split_csv(std::string_view line, std::vector<std::string_view>* fields) {
  fields->clear();
  size_t start = 0;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '"') {
      quoted = !quoted;  // "" toggles twice: stays inside
    } else if (line[i] == ',' && !quoted) {
      fields->push_back(line.substr(start, i - start));
      start = i + 1;
    }
  }
  fields->push_back(line.substr(start));
  return !quoted;
}

// The header a file must start with, checked so that another CSV is not read as this one.
void expect_header(const std::string& path, detail::LineReader& lines, std::string_view header) {
  std::string_view line;
  if (!lines.next(&line)) throw file_error(path, "empty (expected the header '" + std::string(header) + "')");
  if (line != header) {
    throw file_error(path, 1, "expected the header '" + std::string(header) + "', found '" + std::string(line) + "'");
  }
}

constexpr size_t kMaxMovieLensGenres = 1024;

struct Movies {
  std::map<int64_t, std::vector<std::string_view>> genres;  // by movieId, in id order
  std::map<int64_t, int> year;                               // by movieId; 0: none
  std::vector<std::string> vocabulary;                       // sorted
};

Movies read_movies(const std::string& path, std::string_view text) {
  Movies movies;
  detail::LineReader lines(text);
  expect_header(path, lines, "movieId,title,genres");
  std::vector<std::string_view> fields;
  std::string_view line;
  std::map<std::string_view, int> names;
  while (lines.next(&line)) {
    if (line.empty()) continue;
    if (!split_csv(line, &fields)) throw file_error(path, lines.line_number(), "unterminated quote");
    if (fields.size() != 3) {
      throw file_error(path, lines.line_number(),
                       "expected 3 comma-separated fields (movieId, title, genres), found " +
                           std::to_string(fields.size()) + " (a title with commas must be quoted)");
    }
    int64_t id = 0;
    if (!detail::parse_number(fields[0], &id) || id < 0) {
      throw file_error(path, lines.line_number(),
                       "movieId '" + std::string(fields[0]) + "' is not a non-negative integer");
    }
    auto [it, fresh] = movies.genres.try_emplace(id);
    if (!fresh) throw file_error(path, lines.line_number(), "movie " + std::to_string(id) + " is listed twice");
    movies.year.emplace(id, movielens_release_year(fields[1]));
    std::string_view g = fields[2];
    while (true) {
      const size_t bar = g.find('|');
      const std::string_view genre = g.substr(0, bar);
      if (genre.empty()) {
        throw file_error(path, lines.line_number(), "an empty genre in '" + std::string(fields[2]) + "'");
      }
      it->second.push_back(genre);
      names.emplace(genre, 0);
      if (bar == std::string_view::npos) break;
      g.remove_prefix(bar + 1);
    }
  }
  if (movies.genres.empty()) throw file_error(path, "no movies");
  // Each genre is a feature column of every node: bounded before the matrix is sized by it
  // (MovieLens has 20; ~100k made up ones in a few MB would ask for tens of GB).
  if (names.size() > kMaxMovieLensGenres) {
    throw file_error(path, std::to_string(names.size()) + " distinct genres; at most " +
                               std::to_string(kMaxMovieLensGenres) + " (one feature column each)");
  }
  for (const auto& [name, unused] : names) movies.vocabulary.emplace_back(name);
  return movies;
}

struct Rating {
  int64_t user, movie, time;
  float rating;
};

// The graph of `ratings` (every movie of them in `movies`) as readers.h read_movielens
// describes it.
Dataset build_movielens(const std::string& name, const Movies& movies, const std::vector<Rating>& ratings) {
  std::map<int64_t, int64_t> user_index;  // userId -> 0.. in id order
  for (const Rating& r : ratings) user_index.emplace(r.user, 0);
  Dataset d;
  d.name = name;
  const int64_t num_users = static_cast<int64_t>(user_index.size());
  const int64_t num_movies = static_cast<int64_t>(movies.genres.size());
  d.num_nodes = num_users + num_movies;
  // Users first (by userId), then every movie of movies.csv (by movieId).
  int64_t next = 0;
  for (auto& [id, index] : user_index) {
    index = next++;
    d.node_names.push_back("user " + std::to_string(id));
  }
  std::unordered_map<int64_t, int64_t> movie_index;
  const int64_t genres = static_cast<int64_t>(movies.vocabulary.size());
  // Features: the genres (multi-hot), the release year's columns (movielens_year_columns)
  // and a last column that is 1 for users: every user has the same constant row, a movie
  // its genres and year.
  const int64_t users_column = genres + kMovieLensYearColumns;
  d.feature_dim = users_column + 1;
  d.x.assign(static_cast<size_t>(d.num_nodes * d.feature_dim), 0.0f);
  for (int64_t u = 0; u < num_users; ++u) d.x[static_cast<size_t>(u * d.feature_dim + users_column)] = 1.0f;
  for (const auto& [id, names] : movies.genres) {
    const int64_t node = next++;
    movie_index.emplace(id, node);
    d.node_names.push_back("movie " + std::to_string(id));
    for (std::string_view g : names) {
      const int64_t column = std::lower_bound(movies.vocabulary.begin(), movies.vocabulary.end(), g) -
                             movies.vocabulary.begin();
      d.x[static_cast<size_t>(node * d.feature_dim + column)] = 1.0f;
    }
    movielens_year_columns(movies.year.at(id), &d.x[static_cast<size_t>(node * d.feature_dim + genres)]);
  }
  d.node_type_names = {kUsers, kMovies};
  d.node_type.assign(static_cast<size_t>(num_users), 0);
  d.node_type.resize(static_cast<size_t>(d.num_nodes), 1);
  d.edge_types = {{kUsers, "rates", kMovies}, {kMovies, "rated_by", kUsers}};
  d.reverse_edge_type = {1, 0};  // a rating is one link: held out of both types at once
  // Each rating as user -> movie (rates) then movie -> user (rated_by), with its rating as
  // the edge's attribute and its timestamp as the edge's time.
  d.edges.reserve(2 * ratings.size());
  d.edge_feature_dim = 1;
  for (const Rating& r : ratings) {
    const int64_t user = user_index.at(r.user), movie = movie_index.at(r.movie);
    d.edges.push_back(user, movie);
    d.edges.type.push_back(0);
    d.edges.push_back(movie, user);
    d.edges.type.push_back(1);
    for (int k = 0; k < 2; ++k) {
      d.edge_attr.push_back(r.rating);
      d.edge_time.push_back(r.time);
    }
  }
  d.validate();
  return d;
}

}  // namespace

int movielens_release_year(std::string_view title) {
  // A quoted field's closing quote (its inner quotes are doubled: a title ending in a quote
  // ends in two, and has no year).
  if (title.size() >= 2 && title.front() == '"' && title.back() == '"') title.remove_suffix(1);
  while (!title.empty() && title.back() == ' ') title.remove_suffix(1);
  if (title.size() < 6 || title[title.size() - 6] != '(' || title.back() != ')') return 0;
  int year = 0;
  for (size_t i = title.size() - 5; i + 1 < title.size(); ++i) {
    if (title[i] < '0' || title[i] > '9') return 0;
    year = year * 10 + (title[i] - '0');
  }
  return year;
}

void movielens_year_columns(int year, float* columns) {
  std::fill(columns, columns + kMovieLensYearColumns, 0.0f);
  if (year == 0) {
    columns[kMovieLensYearColumns - 1] = 1.0f;  // no year
    return;
  }
  // Decades: before 1930, the 1930s, ..., the 2010s, 2020 or later.
  columns[std::clamp((year - 1920) / 10, 0, kMovieLensDecades - 1)] = 1.0f;
}

Dataset read_movielens(const std::string& dir) {
  const std::string movies_path = dir + "/movies.csv", ratings_path = dir + "/ratings.csv";
  const std::string movies_text = detail::read_file(movies_path);
  const Movies movies = read_movies(movies_path, movies_text);

  std::vector<Rating> ratings;
  {
    const std::string text = detail::read_file(ratings_path);
    detail::ParseProgress progress("read " + ratings_path, text.size());
    detail::LineReader lines(text);
    expect_header(ratings_path, lines, "userId,movieId,rating,timestamp");
    std::vector<std::string_view> fields;
    std::string_view line;
    while (lines.next(&line)) {
      progress.update(lines.position());
      if (line.empty()) continue;
      split_csv(line, &fields);
      const long at = lines.line_number();
      if (fields.size() != 4) {
        throw file_error(ratings_path, at,
                         "expected 4 comma-separated fields (userId, movieId, rating, timestamp), found " +
                             std::to_string(fields.size()));
      }
      Rating r{};
      if (!detail::parse_number(fields[0], &r.user) || r.user < 0) {
        throw file_error(ratings_path, at, "userId '" + std::string(fields[0]) + "' is not a non-negative integer");
      }
      if (!detail::parse_number(fields[1], &r.movie) || r.movie < 0) {
        throw file_error(ratings_path, at, "movieId '" + std::string(fields[1]) + "' is not a non-negative integer");
      }
      if (!detail::parse_number(fields[2], &r.rating) || !std::isfinite(r.rating) || r.rating < 0 || r.rating > 5) {
        throw file_error(ratings_path, at, "rating '" + std::string(fields[2]) + "' is not a number in [0, 5]");
      }
      if (!detail::parse_number(fields[3], &r.time)) {
        throw file_error(ratings_path, at, "timestamp '" + std::string(fields[3]) + "' is not an integer");
      }
      if (movies.genres.count(r.movie) == 0) {
        throw file_error(ratings_path, at, "movie " + std::to_string(r.movie) + " is not in " + movies_path);
      }
      ratings.push_back(r);
    }
    progress.done(text.size());
  }
  if (ratings.empty()) throw file_error(ratings_path, "no ratings");

  return build_movielens(detail::folder_name(dir), movies, ratings);
}

namespace {

// u.genre: `name|index` per line, the indices 0, 1, ... in order; the names in that order.
std::vector<std::string> read_100k_genres(const std::string& path) {
  const std::string text = detail::read_file(path);
  detail::LineReader lines(text);
  std::vector<std::string> names;
  std::string_view line;
  while (lines.next(&line)) {
    if (line.empty()) continue;
    const size_t bar = line.rfind('|');
    int64_t index = -1;
    if (bar == std::string_view::npos || bar == 0 || !detail::parse_number(line.substr(bar + 1), &index)) {
      throw file_error(path, lines.line_number(), "expected 'genre|index', found '" + std::string(line) + "'");
    }
    if (index != static_cast<int64_t>(names.size())) {
      throw file_error(path, lines.line_number(), "genre index " + std::to_string(index) + ", expected " +
                                                      std::to_string(names.size()) + " (the indices count up from 0)");
    }
    names.emplace_back(line.substr(0, bar));
  }
  if (names.empty()) throw file_error(path, "no genres");
  if (names.size() > kMaxMovieLensGenres) throw file_error(path, std::to_string(names.size()) + " genres; at most " +
                                                                     std::to_string(kMaxMovieLensGenres));
  return names;
}

// The year of a u.item release date ("01-Jan-1995"): its last four digits; 0 when empty.
int release_year_of_date(std::string_view date) {
  if (date.size() < 4) return 0;
  int year = 0;
  for (char c : date.substr(date.size() - 4)) {
    if (c < '0' || c > '9') return 0;
    year = year * 10 + (c - '0');
  }
  return year;
}

}  // namespace

Dataset read_movielens_100k(const std::string& dir) {
  const std::string genre_path = dir + "/u.genre", item_path = dir + "/u.item", data_path = dir + "/u.data";
  const std::vector<std::string> genre_names = read_100k_genres(genre_path);
  const size_t num_genres = genre_names.size();
  Movies movies;
  for (const std::string& g : genre_names) movies.vocabulary.push_back(g);
  std::sort(movies.vocabulary.begin(), movies.vocabulary.end());
  {
    // Latin-1 titles: only the fields below are read, none of them decoded as text.
    const std::string text = detail::read_file(item_path);
    detail::LineReader lines(text);
    std::string_view line;
    std::vector<std::string_view> fields;
    while (lines.next(&line)) {
        if (line.empty()) continue;
      fields.clear();
      for (size_t start = 0;;) {
        const size_t bar = line.find('|', start);
        fields.push_back(line.substr(start, bar == std::string_view::npos ? std::string_view::npos : bar - start));
        if (bar == std::string_view::npos) break;
        start = bar + 1;
      }
      const long at = lines.line_number();
      if (fields.size() != 5 + num_genres) {
        throw file_error(item_path, at, "expected " + std::to_string(5 + num_genres) +
                                            " '|'-separated fields (movie id, title, release date, video release "
                                            "date, IMDb URL, then a 0/1 flag per genre of u.genre), found " +
                                            std::to_string(fields.size()));
      }
      int64_t id = 0;
      if (!detail::parse_number(fields[0], &id) || id < 0) {
        throw file_error(item_path, at, "movie id '" + std::string(fields[0]) + "' is not a non-negative integer");
      }
      auto [it, fresh] = movies.genres.try_emplace(id);
      if (!fresh) throw file_error(item_path, at, "movie " + std::to_string(id) + " is listed twice");
      int year = release_year_of_date(fields[2]);
      if (year == 0) year = movielens_release_year(fields[1]);
      movies.year.emplace(id, year);
      for (size_t g = 0; g < num_genres; ++g) {
        const std::string_view flag = fields[5 + g];
        if (flag != "0" && flag != "1") {
          throw file_error(item_path, at, "the flag of genre " + genre_names[g] + " is '" + std::string(flag) +
                                              "', not 0 or 1");
        }
        if (flag == "1") it->second.push_back(genre_names[g]);
      }
    }
    if (movies.genres.empty()) throw file_error(item_path, "no movies");
  }
  std::vector<Rating> ratings;
  {
    const std::string text = detail::read_file(data_path);
    detail::ParseProgress progress("read " + data_path, text.size());
    detail::LineReader lines(text);
    std::string_view line;
    std::vector<std::string_view> fields;
    while (lines.next(&line)) {
      progress.update(lines.position());
        if (line.empty()) continue;
      detail::split_whitespace(line, &fields);
      const long at = lines.line_number();
      if (fields.size() != 4) {
        throw file_error(data_path, at, "expected 4 tab-separated fields (user id, item id, rating, timestamp), found " +
                                            std::to_string(fields.size()));
      }
      Rating r{};
      if (!detail::parse_number(fields[0], &r.user) || r.user < 0) {
        throw file_error(data_path, at, "user id '" + std::string(fields[0]) + "' is not a non-negative integer");
      }
      if (!detail::parse_number(fields[1], &r.movie) || r.movie < 0) {
        throw file_error(data_path, at, "item id '" + std::string(fields[1]) + "' is not a non-negative integer");
      }
      if (!detail::parse_number(fields[2], &r.rating) || !std::isfinite(r.rating) || r.rating < 0 || r.rating > 5) {
        throw file_error(data_path, at, "rating '" + std::string(fields[2]) + "' is not a number in [0, 5]");
      }
      if (!detail::parse_number(fields[3], &r.time)) {
        throw file_error(data_path, at, "timestamp '" + std::string(fields[3]) + "' is not an integer");
      }
      if (movies.genres.count(r.movie) == 0) {
        throw file_error(data_path, at, "item " + std::to_string(r.movie) + " is not in " + item_path);
      }
      ratings.push_back(r);
    }
    progress.done(text.size());
  }
  if (ratings.empty()) throw file_error(data_path, "no ratings");
  return build_movielens(detail::folder_name(dir), movies, ratings);
}

}  // namespace partita
