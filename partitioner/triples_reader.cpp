// Knowledge-graph triples (FB15k-237, WN18RR): train.txt, valid.txt, test.txt with one
// head<TAB>relation<TAB>tail per line.
#include <limits>
#include <string_view>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "base/error.h"
#include "partitioner/reader_util.h"
#include "partitioner/readers.h"

namespace partita {

namespace {

constexpr const char* kEntityType = "entity";

// Dense ids in order of first appearance.
class NameIndex {
 public:
  int64_t id(std::string_view name) {
    auto [it, inserted] = ids_.try_emplace(name, static_cast<int64_t>(names_.size()));
    if (inserted) names_.emplace_back(name);
    return it->second;
  }
  size_t size() const { return names_.size(); }
  std::vector<std::string> take_names() { return std::move(names_); }

 private:
  // Keys view the file buffers, which outlive the index: no string copy per lookup.
  std::unordered_map<std::string_view, int64_t> ids_;
  std::vector<std::string> names_;
};

bool is_blank_line(std::string_view line) {
  for (char c : line) {
    if (!detail::is_blank(c)) return false;
  }
  return true;
}

// Fields are taken exactly as written between the tabs: entity names in some datasets
// contain spaces, so only the tab separates.
void split_tabs(std::string_view line, std::vector<std::string_view>* fields) {
  fields->clear();
  size_t start = 0;
  while (true) {
    size_t tab = line.find('\t', start);
    fields->push_back(line.substr(start, tab == std::string_view::npos ? tab : tab - start));
    if (tab == std::string_view::npos) return;
    start = tab + 1;
  }
}

// held_out: valid or test, after train: a relation train.txt does not have is an error
// (nothing could learn its embedding; an evaluation file of another vocabulary), and an
// entity it does not have is counted in `unseen` (FB15k-237's valid and test have 37 triples
// naming such entities; LibKGE and the papers keep them, at their initial embeddings).
// train_entities: how many entities train.txt named (all of them while reading it).
void parse_triples(const std::string& path, std::string_view text, NameIndex* entities,
                   NameIndex* relations, EdgeList* out, bool held_out, size_t train_entities, int64_t* unseen) {
  static const char* const kFieldNames[] = {"head", "relation", "tail"};
  detail::ParseProgress progress("read " + path, text.size());
  detail::LineReader lines(text);
  std::vector<std::string_view> fields;
  std::string_view line;
  while (lines.next(&line)) {
    if (is_blank_line(line)) continue;
    split_tabs(line, &fields);
    if (fields.size() != 3) {
      throw file_error(path, lines.line_number(),
                       "expected 3 tab-separated fields (head, relation, tail), found " +
                           std::to_string(fields.size()));
    }
    for (int i = 0; i < 3; ++i) {
      if (fields[i].empty()) throw file_error(path, lines.line_number(), std::string("empty ") + kFieldNames[i]);
    }
    const size_t known_relations = relations->size();
    int64_t head = entities->id(fields[0]);
    int64_t relation = relations->id(fields[1]);
    int64_t tail = entities->id(fields[2]);
    if (held_out && static_cast<size_t>(relation) >= known_relations) {
      throw file_error(path, lines.line_number(),
                       "relation '" + std::string(fields[1]) + "' does not occur in train.txt");
    }
    if (held_out && (static_cast<size_t>(head) >= train_entities || static_cast<size_t>(tail) >= train_entities)) {
      ++*unseen;
    }
    if (relation > std::numeric_limits<int32_t>::max()) {
      throw file_error(path, lines.line_number(), "more relations than an int32 edge type can hold");
    }
    out->push_back(head, tail);
    out->type.push_back(static_cast<int32_t>(relation));
    progress.update(lines.position());
  }
  progress.done(text.size());
}

}  // namespace

// The whole dataset is one node type ("entity") and one edge type per relation, so KG
// models see the relation of every edge through edges.type.
Dataset read_triples(const std::string& dir) {
  const std::string prefix = dir + (dir.empty() || dir.back() == '/' ? "" : "/");
  struct Split {
    std::string path;
    EdgeList* edges;
    std::string text;
  };
  Dataset d;
  d.name = detail::folder_name(dir);
  Split splits[] = {{prefix + "train.txt", &d.edges, {}},
                    {prefix + "valid.txt", &d.val_edges, {}},
                    {prefix + "test.txt", &d.test_edges, {}}};
  // All three buffers stay alive while parsing: the name index keys point into them.
  for (Split& s : splits) s.text = detail::read_file(s.path);

  NameIndex entities, relations;
  int64_t unseen = 0;
  size_t train_entities = 0;
  for (Split& s : splits) {
    const bool held_out = s.edges != &d.edges;
    parse_triples(s.path, s.text, &entities, &relations, s.edges, held_out, train_entities, &unseen);
    if (d.edges.size() == 0) throw file_error(splits[0].path, "no triples");
    if (!held_out) train_entities = entities.size();
  }
  if (unseen > 0) {
    spdlog::warn("{}: {} valid/test triple(s) name entities that no training triple has; they keep their initial "
                 "embeddings", dir, unseen);
  }

  d.num_nodes = static_cast<int64_t>(entities.size());
  d.node_names = entities.take_names();
  d.node_type_names = {kEntityType};
  d.node_type.assign(static_cast<size_t>(d.num_nodes), 0);
  for (std::string& relation : relations.take_names()) {
    d.edge_types.push_back(EdgeType{kEntityType, std::move(relation), kEntityType});
  }
  d.validate();
  return d;
}

}  // namespace partita
