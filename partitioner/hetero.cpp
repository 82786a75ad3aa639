// A small academic graph in the shape of OGB's MAG (papers, authors, venues), with the
// field of a paper as its label and visible, imperfectly, in its venue, authors and
// citations, so a relational GNN has something to learn from each edge type.
#include <algorithm>
#include <cmath>
#include <string>

#include "base/progress.h"
#include "partitioner/generator_util.h"
#include "partitioner/generators.h"
#include "partitioner/splits.h"

namespace partita {

namespace {

using gen::require;

constexpr int64_t kPaperChunk = int64_t{1} << 12;
// A paper appears in a venue of its own field this often, else in any venue.
constexpr double kVenueInField = 0.9;

enum NodeTypeId : int32_t { kPaper, kAuthor, kVenue };
enum EdgeTypeId : int32_t { kWrites, kWrittenBy, kCites, kPublishedIn, kPublishes };

void check_options(const HeteroOptions& o) {
  require(o.num_classes >= 1, "--classes", "must be at least 1");
  // Same-field citations need a second paper in every field.
  require(o.num_papers >= 2 * o.num_classes, "--papers",
          "must be at least 2 * classes = " + std::to_string(2 * o.num_classes));
  // Venue v and author a belong to field v % classes and a % classes: every field needs one.
  require(o.num_authors >= o.num_classes, "--authors",
          "must be at least classes = " + std::to_string(o.num_classes));
  require(o.num_venues >= o.num_classes, "--venues",
          "must be at least classes = " + std::to_string(o.num_classes));
  require(o.citations_per_paper >= 0 && o.citations_per_paper < 1e6, "--citations",
          "must be in [0, 1e6)");
  require(o.authors_per_paper >= 0 && o.authors_per_paper < 1e6, "--authors-per-paper",
          "must be in [0, 1e6)");
  require(o.homophily >= 0 && o.homophily <= 1, "--homophily", "must be in [0, 1]");
  require(o.feature_dim >= 0, "--features", "must not be negative");
  require(o.noise >= 0 && std::isfinite(o.noise), "--noise", "must not be negative");
  gen::check_threads(o.threads);
  check_split_options(o.split, o.num_papers);
}

// offsets[i]..offsets[i+1] are paper i's slots for a per-paper count with mean `mean`: its
// floor, plus one with probability equal to the fractional part, so the total is close to
// num_papers * mean and every count is known before any edge is drawn.
std::vector<int64_t> count_offsets(int64_t num_papers, double mean, uint64_t seed) {
  const int64_t whole = static_cast<int64_t>(mean);
  const double fraction = mean - static_cast<double>(whole);
  std::vector<int64_t> offsets(static_cast<size_t>(num_papers + 1));
  offsets[0] = 0;
  for (int64_t i = 0; i < num_papers; ++i) {
    const bool extra = gen::unit_interval(mix64(seed, static_cast<uint64_t>(i))) < fraction;
    offsets[i + 1] = offsets[i] + whole + (extra ? 1 : 0);
  }
  return offsets;
}

// A uniform one of the ids in [0, count) that belong to field f, i.e. f, f + C, f + 2C, ...
int64_t member_of_field(int64_t count, int64_t num_classes, int64_t f, Rng& rng) {
  const int64_t members = (count - f + num_classes - 1) / num_classes;
  return f + num_classes * static_cast<int64_t>(rng.below(static_cast<uint64_t>(members)));
}

}  // namespace

Dataset generate_hetero(const HeteroOptions& options) {
  check_options(options);
  const int64_t papers = options.num_papers, authors = options.num_authors;
  const int64_t venues = options.num_venues, C = options.num_classes;
  const int64_t first_author = papers, first_venue = papers + authors;
  const uint64_t seed = options.seed;

  Dataset d;
  d.name = "hetero";
  d.num_nodes = papers + authors + venues;
  d.node_type_names = {"paper", "author", "venue"};
  d.node_type.resize(static_cast<size_t>(d.num_nodes));
  std::fill(d.node_type.begin(), d.node_type.begin() + first_author, kPaper);
  std::fill(d.node_type.begin() + first_author, d.node_type.begin() + first_venue, kAuthor);
  std::fill(d.node_type.begin() + first_venue, d.node_type.end(), kVenue);
  // In EdgeTypeId order.
  d.edge_types = {{"author", "writes", "paper"},
                  {"paper", "written_by", "author"},
                  {"paper", "cites", "paper"},
                  {"paper", "published_in", "venue"},
                  {"venue", "publishes", "paper"}};
  d.reverse_edge_type = {1, 0, -1, 4, 3};  // a held-out link leaves both of its types

  const gen::BalancedClasses fields(papers, C, mix64(seed, gen::kPermutationStream));
  d.num_classes = C;
  d.y.assign(static_cast<size_t>(d.num_nodes), -1);
  for (int64_t i = 0; i < papers; ++i) d.y[i] = fields.class_of(i);

  // Edges, grouped by type: writes | written_by | cites | published_in | publishes. Each
  // reverse type mirrors its forward type position by position.
  const std::vector<int64_t> author_slots =
      count_offsets(papers, options.authors_per_paper, mix64(seed, gen::kAuthorCountStream));
  const std::vector<int64_t> citation_slots =
      count_offsets(papers, options.citations_per_paper, mix64(seed, gen::kCitationCountStream));
  const int64_t num_writes = author_slots[papers], num_cites = citation_slots[papers];
  const int64_t writes_at = 0, written_by_at = num_writes, cites_at = 2 * num_writes;
  const int64_t published_in_at = cites_at + num_cites, publishes_at = published_in_at + papers;
  const int64_t num_edges = publishes_at + papers;

  EdgeList& edges = d.edges;
  edges.src.resize(static_cast<size_t>(num_edges));
  edges.dst.resize(static_cast<size_t>(num_edges));
  edges.type.resize(static_cast<size_t>(num_edges));
  auto type_range = [&](int64_t begin, int64_t end, EdgeTypeId type) {
    std::fill(edges.type.begin() + begin, edges.type.begin() + end, type);
  };
  type_range(writes_at, written_by_at, kWrites);
  type_range(written_by_at, cites_at, kWrittenBy);
  type_range(cites_at, published_in_at, kCites);
  type_range(published_in_at, publishes_at, kPublishedIn);
  type_range(publishes_at, num_edges, kPublishes);

  auto put = [&](int64_t at, int64_t src, int64_t dst) {
    edges.src[at] = src;
    edges.dst[at] = dst;
  };
  Progress progress("hetero", num_edges, "edges");
  gen::for_each_chunk(papers, kPaperChunk, options.threads, [&](int64_t chunk, int64_t begin,
                                                                int64_t end) {
    Rng rng(mix64(seed, gen::kEdgeStream, static_cast<uint64_t>(chunk)));
    for (int64_t paper = begin; paper < end; ++paper) {
      const int64_t field = fields.class_of(paper);

      const int64_t venue = first_venue + (rng.uniform() < kVenueInField
                                               ? member_of_field(venues, C, field, rng)
                                               : static_cast<int64_t>(rng.below(venues)));
      put(published_in_at + paper, paper, venue);
      put(publishes_at + paper, venue, paper);

      for (int64_t k = author_slots[paper]; k < author_slots[paper + 1]; ++k) {
        const int64_t author = first_author + (rng.uniform() < options.homophily
                                                   ? member_of_field(authors, C, field, rng)
                                                   : static_cast<int64_t>(rng.below(authors)));
        put(writes_at + k, author, paper);
        put(written_by_at + k, paper, author);
      }

      for (int64_t k = citation_slots[paper]; k < citation_slots[paper + 1]; ++k) {
        int64_t cited;
        if (rng.uniform() < options.homophily) {
          cited = fields.classmate(paper, rng);
        } else {
          cited = static_cast<int64_t>(rng.below(static_cast<uint64_t>(papers - 1)));
          if (cited >= paper) ++cited;  // any paper but itself
        }
        put(cites_at + k, paper, cited);
      }
    }
    progress.advance(2 * (author_slots[end] - author_slots[begin]) +
                     (citation_slots[end] - citation_slots[begin]) + 2 * (end - begin));
  });
  progress.done();

  d.feature_dim = options.feature_dim;
  d.x = gen::class_features(d.y, C, options.feature_dim, options.noise,
                            mix64(seed, gen::kFeatureStream), options.threads);

  assign_random_split(d, papers, options.split, mix64(seed, gen::kSplitStream));  // papers first
  d.validate();
  return d;
}

}  // namespace partita
