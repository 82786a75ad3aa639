// RDF entity classification (the R-GCN benchmarks: AIFB, MUTAG, BGS, AM): one N-Triples
// graph, gzipped or not, and two TSV files naming the labelled entities of the train and
// test splits. Every IRI, blank node and distinct literal is a node; every predicate is a
// relation, with its inverse, as in Schlichtkrull et al. 2018 §2 and their data release.
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <spdlog/spdlog.h>

#include "base/error.h"
#include "base/random.h"
#include "partitioner/reader_util.h"
#include "partitioner/readers.h"
#include "partitioner/splits.h"

namespace partita {

namespace {

namespace fs = std::filesystem;

constexpr const char* kRdfType = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";
// A decompressed graph beyond this is not a benchmark that fits one machine's reader.
constexpr size_t kMaxGraphBytes = size_t{16} << 30;

enum NodeTypeId : int32_t { kEntity, kClass, kLiteral };
const char* const kNodeTypeNames[] = {"entity", "class", "literal"};

// The predicates whose triples give the labels away, by the label column's name
// ("label_affiliation"): the predicate itself and its known inverse. R-GCN's release strips
// them from AIFB (affiliation / employs); a graph that still has them loses them here.
const std::map<std::string, std::vector<std::string>> kLabelPredicateInverses = {
    {"affiliation", {"employs"}},
};

// "x" for ".../ontology#x" or ".../x".
std::string_view local_name(std::string_view iri) {
  const size_t cut = iri.find_last_of("#/");
  return cut == std::string_view::npos ? iri : iri.substr(cut + 1);
}

std::string read_maybe_gzipped(const std::string& path) {
  if (path.size() < 3 || path.compare(path.size() - 3, 3, ".gz") != 0) return detail::read_file(path);
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) throw file_error(path, "cannot open: " + errno_text());
  std::string text;
  char buffer[1 << 16];
  while (true) {
    const int got = gzread(file, buffer, sizeof(buffer));
    if (got < 0) {
      int code = 0;
      const std::string why = gzerror(file, &code);
      gzclose(file);
      throw file_error(path, "not a readable gzip file: " + why);
    }
    if (got == 0) {
      // A truncated stream ends like a whole one: only the error state tells them apart.
      int code = Z_OK;
      const std::string why = gzerror(file, &code);
      if (code != Z_OK && code != Z_STREAM_END) {
        gzclose(file);
        throw file_error(path, "not a readable gzip file: " + why);
      }
      break;
    }
    text.append(buffer, static_cast<size_t>(got));
    if (text.size() > kMaxGraphBytes) {
      gzclose(file);
      throw file_error(path, "more than " + std::to_string(kMaxGraphBytes >> 30) + " GiB once decompressed");
    }
  }
  gzclose(file);
  return text;
}

// One RDF term of a line: an IRI <...>, a blank node _:x, or a literal "..." with an
// optional ^^<datatype> or @lang. `text` is the term as written (the node's name).
struct Term {
  enum Kind { kIri, kBlank, kLiteral } kind = kIri;
  std::string_view text;
  std::string_view value() const { return kind == kIri ? text.substr(1, text.size() - 2) : text; }
};

class LineParser {
 public:
  LineParser(const std::string& path, long line_number, std::string_view line)
      : path_(path), line_number_(line_number), line_(line) {}

  Term term(const char* role) {
    skip_blanks();
    if (pos_ >= line_.size()) fail(std::string("the line ends before its ") + role);
    const size_t start = pos_;
    const char c = line_[pos_];
    Term t;
    if (c == '<') {
      const size_t end = line_.find('>', pos_);
      if (end == std::string_view::npos) fail(std::string("unterminated IRI in the ") + role);
      pos_ = end + 1;
      t.kind = Term::kIri;
    } else if (c == '_' && pos_ + 1 < line_.size() && line_[pos_ + 1] == ':') {
      pos_ += 2;
      while (pos_ < line_.size() && !detail::is_blank(line_[pos_])) ++pos_;
      if (pos_ == start + 2) fail(std::string("empty blank node label in the ") + role);
      t.kind = Term::kBlank;
    } else if (c == '"') {
      ++pos_;
      while (pos_ < line_.size() && line_[pos_] != '"') pos_ += line_[pos_] == '\\' ? 2 : 1;
      if (pos_ >= line_.size()) fail(std::string("unterminated literal in the ") + role);
      ++pos_;
      if (line_.compare(pos_, 2, "^^") == 0) {
        pos_ += 2;
        if (pos_ >= line_.size() || line_[pos_] != '<') fail("a literal's datatype must be an IRI <...>");
        const size_t end = line_.find('>', pos_);
        if (end == std::string_view::npos) fail("unterminated datatype IRI");
        pos_ = end + 1;
      } else if (pos_ < line_.size() && line_[pos_] == '@') {
        ++pos_;
        while (pos_ < line_.size() && !detail::is_blank(line_[pos_])) ++pos_;
      }
      t.kind = Term::kLiteral;
    } else {
      fail(std::string("expected an IRI <...>, a blank node _:x or a literal \"...\" as the ") + role + ", found '" +
           std::string(line_.substr(pos_, 20)) + "'");
    }
    t.text = line_.substr(start, pos_ - start);
    return t;
  }

  void end() {
    skip_blanks();
    if (pos_ >= line_.size() || line_[pos_] != '.') fail("expected '.' after the object");
    ++pos_;
    skip_blanks();
    if (pos_ < line_.size() && line_[pos_] != '#') fail("unexpected text after the '.'");
  }

  [[noreturn]] void fail(const std::string& why) const { throw file_error(path_, line_number_, why); }

 private:
  void skip_blanks() {
    while (pos_ < line_.size() && detail::is_blank(line_[pos_])) ++pos_;
  }

  const std::string& path_;
  long line_number_;
  std::string_view line_;
  size_t pos_ = 0;
};

struct Triple {
  int64_t s, p, o;
};

// Dense ids in order of first appearance; keys view the graph's text, which outlives it.
class Names {
 public:
  int64_t id(std::string_view name) {
    auto [it, inserted] = ids_.try_emplace(name, static_cast<int64_t>(names_.size()));
    if (inserted) names_.push_back(name);
    return it->second;
  }
  int64_t find(std::string_view name) const {
    auto it = ids_.find(name);
    return it == ids_.end() ? -1 : it->second;
  }
  size_t size() const { return names_.size(); }
  std::string_view name(int64_t id) const { return names_[static_cast<size_t>(id)]; }

 private:
  std::unordered_map<std::string_view, int64_t> ids_;
  std::vector<std::string_view> names_;
};

std::string find_graph_file(const std::string& dir) {
  std::vector<std::string> found;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    auto ends_with = [&](const std::string& suffix) {
      return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (ends_with(".nt") || ends_with(".nt.gz")) found.push_back(entry.path().string());
  }
  if (error) throw file_error(dir, "cannot list the folder: " + error.message());
  if (found.size() != 1) {
    throw file_error(dir, "expected exactly one N-Triples file (*.nt or *.nt.gz), found " + std::to_string(found.size()));
  }
  return found[0];
}

// One split file: header `entity<TAB>id<TAB>label_X`, then one labelled entity per line.
struct LabelRow {
  std::string entity;
  std::string label;
  long line = 0;
};
struct LabelFile {
  std::string path;
  std::string label_column;  // "label_affiliation"
  std::vector<LabelRow> rows;
};

LabelFile read_labels(const std::string& path) {
  LabelFile f;
  f.path = path;
  const std::string text = detail::read_file(path);
  detail::LineReader lines(text);
  std::string_view line;
  std::vector<std::string_view> fields;
  auto split = [&](std::string_view l) {
    fields.clear();
    size_t start = 0;
    while (true) {
      const size_t tab = l.find('\t', start);
      fields.push_back(l.substr(start, tab == std::string_view::npos ? tab : tab - start));
      if (tab == std::string_view::npos) return;
      start = tab + 1;
    }
  };
  if (!lines.next(&line)) throw file_error(path, "empty: expected a header line (entity, id, label_...)");
  split(line);
  if (fields.size() != 3 || fields[2].substr(0, 6) != "label_") {
    throw file_error(path, 1, "expected the header entity<TAB>id<TAB>label_NAME");
  }
  f.label_column = std::string(fields[2]);
  while (lines.next(&line)) {
    if (line.empty()) continue;
    split(line);
    if (fields.size() != 3 || fields[0].empty() || fields[2].empty()) {
      throw file_error(path, lines.line_number(), "expected 3 tab-separated fields (entity, id, label)");
    }
    f.rows.push_back({std::string(fields[0]), std::string(fields[2]), lines.line_number()});
  }
  if (f.rows.empty()) throw file_error(path, "no labelled entities");
  return f;
}

}  // namespace

Dataset read_ntriples(const std::string& dir, const ReadOptions& options) {
  const std::string graph_path = find_graph_file(dir);
  const fs::path base(dir);
  const LabelFile train = read_labels((base / "trainingSet.tsv").string());
  const LabelFile test = read_labels((base / "testSet.tsv").string());
  if (train.label_column != test.label_column) {
    throw file_error(test.path, 1, "label column '" + test.label_column + "' differs from " + train.path + "'s '" +
                                       train.label_column + "'");
  }
  // The predicates that state the label (and their inverses) leave the graph.
  std::unordered_set<std::string> label_predicates = {train.label_column.substr(6)};
  if (auto it = kLabelPredicateInverses.find(train.label_column.substr(6)); it != kLabelPredicateInverses.end()) {
    label_predicates.insert(it->second.begin(), it->second.end());
  }

  const std::string text = read_maybe_gzipped(graph_path);
  Names nodes, predicates;
  std::vector<Term::Kind> kinds;
  std::vector<Triple> triples;
  int64_t dropped = 0, duplicates = 0;
  {
    struct TripleHash {
      size_t operator()(const Triple& t) const {
        return static_cast<size_t>(mix64(static_cast<uint64_t>(t.s), static_cast<uint64_t>(t.p), static_cast<uint64_t>(t.o)));
      }
    };
    struct TripleEq {
      bool operator()(const Triple& a, const Triple& b) const { return a.s == b.s && a.p == b.p && a.o == b.o; }
    };
    std::unordered_set<Triple, TripleHash, TripleEq> seen;
    detail::ParseProgress progress("read " + graph_path, text.size());
    detail::LineReader lines(text);
    std::string_view line;
    auto node = [&](const Term& t) {
      const int64_t id = nodes.id(t.text);
      if (static_cast<size_t>(id) == kinds.size()) kinds.push_back(t.kind);
      return id;
    };
    while (lines.next(&line)) {
      size_t first = 0;
      while (first < line.size() && detail::is_blank(line[first])) ++first;
      if (first == line.size() || line[first] == '#') continue;
      LineParser parser(graph_path, lines.line_number(), line);
      const Term s = parser.term("subject");
      if (s.kind == Term::kLiteral) {
        parser.fail("a literal where an entity is expected: the subject " + std::string(s.text) +
                    " must be an IRI or a blank node");
      }
      const Term p = parser.term("predicate");
      if (p.kind != Term::kIri) {
        parser.fail("a " + std::string(p.kind == Term::kLiteral ? "literal" : "blank node") +
                    " where an entity is expected: the predicate " + std::string(p.text) + " must be an IRI");
      }
      const Term o = parser.term("object");
      parser.end();
      progress.update(lines.position());
      if (label_predicates.count(std::string(local_name(p.value()))) != 0) {
        ++dropped;
        continue;
      }
      const Triple t{node(s), predicates.id(p.value()), node(o)};
      if (!seen.insert(t).second) {
        ++duplicates;
        continue;
      }
      triples.push_back(t);
    }
    progress.done(text.size());
  }
  if (triples.empty()) throw file_error(graph_path, "no triples");
  if (dropped > 0) {
    spdlog::info("{}: removed {} triple(s) of the label predicate{} ({})", graph_path, dropped,
                 label_predicates.size() > 1 ? "s and inverses" : "", train.label_column);
  }
  if (duplicates > 0) spdlog::info("{}: {} repeated triple(s) merged (an RDF graph is a set)", graph_path, duplicates);

  Dataset d;
  d.name = detail::folder_name(dir);
  d.num_nodes = static_cast<int64_t>(nodes.size());
  d.node_type_names.assign(std::begin(kNodeTypeNames), std::end(kNodeTypeNames));
  d.node_type.resize(static_cast<size_t>(d.num_nodes));
  for (size_t v = 0; v < kinds.size(); ++v) d.node_type[v] = kinds[v] == Term::kLiteral ? kLiteral : kEntity;
  const int64_t rdf_type = predicates.find(kRdfType);
  for (const Triple& t : triples) {
    if (t.p == rdf_type && d.node_type[t.o] == kEntity) d.node_type[t.o] = kClass;
  }
  d.node_names.reserve(nodes.size());
  for (size_t v = 0; v < nodes.size(); ++v) d.node_names.emplace_back(nodes.name(static_cast<int64_t>(v)));

  // Edge types: (source type, predicate, destination type) in order of first appearance,
  // each followed by its inverse "^predicate" (SPARQL's inverse path). Forward edges first,
  // then their inverses in the same order.
  std::map<std::tuple<int32_t, int64_t, int32_t>, int32_t> type_of;
  std::vector<int32_t> forward_type(triples.size());
  for (size_t i = 0; i < triples.size(); ++i) {
    const Triple& t = triples[i];
    const auto key = std::make_tuple(d.node_type[t.s], t.p, d.node_type[t.o]);
    auto [it, inserted] = type_of.try_emplace(key, static_cast<int32_t>(d.edge_types.size()));
    if (inserted) {
      const std::string p(predicates.name(t.p));
      const std::string src = kNodeTypeNames[d.node_type[t.s]], dst = kNodeTypeNames[d.node_type[t.o]];
      d.edge_types.push_back({src, p, dst});
      d.edge_types.push_back({dst, "^" + p, src});
    }
    forward_type[i] = it->second;
  }
  // A link and its inverse are one link: holding it out removes both (splits.h).
  d.reverse_edge_type.resize(d.edge_types.size());
  for (int32_t t = 0; t + 1 < static_cast<int32_t>(d.edge_types.size()); t += 2) {
    d.reverse_edge_type[t] = t + 1;
    d.reverse_edge_type[t + 1] = t;
  }
  const size_t m = triples.size();
  d.edges.reserve(2 * m);
  for (size_t i = 0; i < m; ++i) d.edges.push_back(triples[i].s, triples[i].o);
  for (size_t i = 0; i < m; ++i) d.edges.push_back(triples[i].o, triples[i].s);
  d.edges.type.resize(2 * m);
  for (size_t i = 0; i < m; ++i) {
    d.edges.type[i] = forward_type[i];
    d.edges.type[m + i] = forward_type[i] + 1;
  }

  // Labels: classes in sorted order of their names; the labelled entities must be nodes.
  std::map<std::string, int64_t> classes;
  for (const LabelFile* f : {&train, &test}) {
    for (const LabelRow& r : f->rows) classes.emplace(r.label, 0);
  }
  int64_t next = 0;
  for (auto& [name, id] : classes) id = next++;
  d.num_classes = next;
  d.y.assign(static_cast<size_t>(d.num_nodes), -1);
  std::vector<int64_t> train_nodes, test_nodes;
  for (const LabelFile* f : {&train, &test}) {
    for (const LabelRow& r : f->rows) {
      int64_t v = nodes.find("<" + r.entity + ">");
      if (v < 0) v = nodes.find(r.entity);  // a blank node, or an IRI written with its brackets
      if (v < 0) {
        if (nodes.find("\"" + r.entity + "\"") >= 0) {
          throw file_error(f->path, r.line, "a literal where an entity is expected: '" + r.entity +
                                                "' is a literal of the graph, not an IRI");
        }
        throw file_error(f->path, r.line, "entity '" + r.entity + "' does not occur in " + graph_path);
      }
      if (d.node_type[v] == kLiteral) {
        throw file_error(f->path, r.line, "a literal where an entity is expected: '" + r.entity + "'");
      }
      if (d.y[v] >= 0) {
        throw file_error(f->path, r.line, "entity '" + r.entity + "' is labelled more than once (train and test "
                                                                   "must be disjoint)");
      }
      d.y[v] = classes[r.label];
      (f == &train ? train_nodes : test_nodes).push_back(v);
    }
  }
  // The release has no validation split: by default 20% of the training entities, seeded,
  // as DGL's and PyG's R-GCN examples cut one for model selection.
  SplitOptions cut;
  cut.train_fraction = 1.0 - options.val_fraction;
  cut.val_fraction = options.val_fraction;
  cut.test_fraction = 0.0;
  NodeSplit split = random_node_split(train_nodes, cut, options.split_seed);
  d.train_idx = std::move(split.train);
  d.val_idx = std::move(split.val);
  std::sort(test_nodes.begin(), test_nodes.end());
  d.test_idx = std::move(test_nodes);
  d.validate();
  return d;
}

}  // namespace partita
