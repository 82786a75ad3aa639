// Dataset readers. Each yields a validated Dataset or throws an Error naming the file,
// the line where there is one, and the problem.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "partitioner/dataset.h"

namespace partita {

struct ReadOptions {
  // Seed of the per-class split for formats whose files carry none (LINQS), and of the
  // validation cut of RDF entity classification (ntriples).
  uint64_t split_seed = 0;
  // ntriples: the share of the training entities cut for validation (the release has
  // none). A job passes 0, training on the benchmark's whole training set as the R-GCN
  // papers do, and cuts validation only when asked (data.holdout.val).
  double val_fraction = 0.2;
  // Edge lists only (read_dataset refuses them for other formats):
  // remap_ids: node ids are any whitespace-free tokens (sparse integers such as PubMed's
  //   PMIDs, or names), numbered 0..N-1 in order of first appearance; Dataset::node_names
  //   keeps each node's token.
  // undirected: the graph is the symmetric closure of the file's edges: every pair in both
  //   directions once, self-loops once, sorted by (dst, src); repeated pairs merge.
  bool remap_ids = false;
  bool undirected = false;
};

// LINQS citation format (Cora, CiteSeer). `path` is a folder holding exactly one
// `X.content` and `X.cites`, or the common prefix `dir/X`. Dangling citations are counted
// and skipped, self-loops dropped, duplicates merged, and the graph made undirected.
// Node ids follow the .content lines; classes are numbered in sorted order of their names.
// Edges are sorted by (dst, src), the order of a CSC (in-neighbour) view.
// Split (seeded): 20 train nodes per class, then 500 validation and 1000 test nodes.
// A graph too small for that keeps the 20 (or fewer) per class and gives what remains to
// validation first, then test, either possibly short or empty.
Dataset read_linqs(const std::string& path, const ReadOptions& options = {});

// A folder of .npy files as a PyG user writes them: edge_index int64 [2,E] (required),
// x [N,F], y [N], edge_attr [E,Fe], node_time [N], edge_time [E], and train_idx /
// val_idx / test_idx (int64 ids or bool masks). Also node_type [N] and edge_type [E]
// with their names in types.json (heterogeneous graphs); each edge's endpoints must have
// the node types its edge type names. Float64 features are converted
// to float32, int32 ids to int64.
Dataset read_npy_folder(const std::string& dir);

// The file every npy dataset folder has: what marks a folder as replaceable by --overwrite.
constexpr const char* kNpyFolderMarker = "edge_index.npy";

// Writes `d` as read_npy_folder reads it (the generators' output format).
void write_npy_folder(const Dataset& d, const std::string& dir);

// Text edge list: one `src dst` pair per line (whitespace-separated non-negative integers),
// `#` starts a comment. Node count = largest id + 1, which must not exceed
// 16 * edges + 1,000,000: sparse ids (hashes, say) need options.remap_ids. Edges keep the
// file's order and direction unless options.undirected.
Dataset read_edgelist(const std::string& path, const ReadOptions& options = {});

// Knowledge-graph triples: a folder with train.txt, valid.txt and test.txt, one
// `head<TAB>relation<TAB>tail` per line (LF or CRLF). Entities and relations map to ids
// in order of first appearance (train, then valid, then test); each relation is an edge type.
// `edges` holds the train triples; valid/test go to val_edges/test_edges.
Dataset read_triples(const std::string& dir);

// MovieLens (ml-latest-small, PyG's MovieLens): a folder with ratings.csv
// (userId,movieId,rating,timestamp) and movies.csv (movieId,title,genres; quoted titles
// may hold commas; genres `|`-separated), each with its header line. Node types `user`
// (those who rated, by userId) then `movie` (every movie of movies.csv, by movieId); edge
// types `user rates movie` and its reverse `movie rated_by user`: each rating is both
// edges, next to each other, with the rating as the edge attribute (float, 1 column) and
// the timestamp as the edge time (temporal sampling's). Features: the movies' genres
// multi-hot over the sorted genre names, then the release year's kMovieLensYearColumns
// columns (movielens_year_columns), then a column that is 1 for users (every user the
// same constant row, 0 in every other column). No labels or node splits. A rating of a
// movie movies.csv lacks, a rating outside [0, 5], a malformed line: an Error naming the
// file and line.
Dataset read_movielens(const std::string& dir);

// MovieLens 100K (ml-100k) as GroupLens ships it: a folder with u.data (`user id<TAB>item
// id<TAB>rating<TAB>timestamp`), u.item (`movie id|title|release date|video release
// date|IMDb URL|` then a 0/1 flag per genre; Latin-1 titles) and u.genre (`name|index`,
// the indices 0, 1, ... in the order of u.item's flags). The graph is read_movielens's:
// node types `user` (those who rated, by id) then `movie` (every movie of u.item, by id),
// the two edge types of each rating with its rating and timestamp, the same feature
// columns (genres multi-hot over the sorted genre names, the release year's columns from
// the release date, else from the title, then the users' column). A malformed line, a
// genre index out of order, a flag that is not 0 or 1, a rating of an item u.item lacks:
// an Error naming the file and line.
Dataset read_movielens_100k(const std::string& dir);

// A movie's release year, from its title as movies.csv writes it ("Toy Story (1995)"):
// the four digits of a final "(YYYY)", trailing spaces (and the closing quote of a quoted
// field) ignored; 0 (no year) for any other title: none at the end ("Black Mirror"), a
// range ("Death Note (2006–2007)"), not four digits, or "(0000)". ml-latest-small has 13
// of 9,742 titles without one.
int movielens_release_year(std::string_view title);

// The year's feature columns: what a movie is besides its genres, for a movie with no
// rating yet to be scored from. On ml-latest-small's streaming time split the test AUC of
// the movies first rated in the test period rose from 0.79-0.81 to 0.84-0.87 with them, the
// others' from 0.875 to 0.89 (BENCHMARKS.md, "Cold movies: the release year"; the decades
// alone did as well as with a scaled year beside them, and better than the scaled year alone):
//   [0, kMovieLensDecades)   one-hot decade: before 1930, the 1930s, ..., the 2010s, 2020 on
//   kMovieLensDecades        1 when the title has no year (every other column then 0)
// `columns` has room for kMovieLensYearColumns floats; every one is written.
constexpr int kMovieLensDecades = 11;
constexpr int kMovieLensYearColumns = kMovieLensDecades + 1;
void movielens_year_columns(int year, float* columns);

// RDF entity classification as the R-GCN benchmarks ship it (AIFB): a folder with one
// N-Triples graph (`*.nt`, or gzipped `*.nt.gz`) and `trainingSet.tsv` / `testSet.tsv`
// (header `entity<TAB>id<TAB>label_NAME`, one labelled entity IRI per line).
// - Nodes: every IRI, blank node and distinct literal (as written, datatype or language
//   included), in order of first appearance. Node types: `class` (an IRI that is the object
//   of some rdf:type triple), `literal`, and `entity` (every other IRI or blank node).
// - Edges: each triple s -p-> o once (a repeated triple is merged) with edge type
//   (type(s), p, type(o)) named by p's IRI, and its inverse o -> s with type
//   (type(o), ^p, type(s)) (SPARQL's inverse path), as R-GCN adds inverse relations.
//   Triples of the label predicate (local name NAME of the label column) and its known
//   inverse (affiliation: employs) are removed, as R-GCN's AIFB setup does, or the task
//   would be read off the graph.
// - Labels: classes numbered in sorted order of the label IRIs; the train file's entities
//   split into train and validation (options.val_fraction of them, seeded by `split_seed`;
//   the release has no validation split), the test file's entities are the test split.
// Errors name the file and line: a malformed N-Triples line, a literal where an entity is
// expected (a triple's subject or predicate, a labelled entity), an entity of a split file
// that is not in the graph or is labelled twice.
Dataset read_ntriples(const std::string& dir, const ReadOptions& options = {});

// Dispatches on format: "linqs", "npy", "edgelist", "triples", "movielens", "movielens100k",
// "ntriples".
// Unknown format: UsageError.
Dataset read_dataset(const std::string& format, const std::string& path,
                     const ReadOptions& options = {});

}  // namespace partita
