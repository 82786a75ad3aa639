// partita datasets list | download NAME | path NAME: the named public datasets
// (datasets/registry.h) and the cache they are downloaded to (datasets/dataset_cache.h).
#include <spdlog/spdlog.h>

#include <iostream>

#include "base/error.h"
#include "datasets/dataset_cache.h"
#include "datasets/registry.h"
#include "tools/commands.h"

namespace partita::cli {

namespace {

struct DatasetsOptions {
  std::string cache_dir;
  std::string mirror;
  std::string name;
};

void print_terms(const datasets::NamedDataset& d, std::ostream& out) {
  out << "  licence:  " << d.licence << "\n  cite:     " << d.citation << "\n";
}

void list(const DatasetsOptions& o) {
  const std::string cache = datasets::cache_dir_or_default(o.cache_dir);
  std::cout << "cache: " << cache << "\n";
  for (const datasets::NamedDataset& d : datasets::registry()) {
    std::cout << "\n" << d.name << (datasets::is_cached(d, cache) ? "  (downloaded)" : "") << "\n  " << d.title
              << "\n  format:   " << (d.format.empty() ? "none yet (download gives the files)" : d.format)
              << "\n  source:   ";
    for (size_t i = 0; i < d.files.size(); ++i) std::cout << (i ? ", " : "") << d.files[i].url;
    std::cout << (datasets::needs_first_sum(d) ? "  (no SHA-256 recorded: checked against nothing)" : "") << "\n";
    print_terms(d, std::cout);
  }
}

void download(const DatasetsOptions& o) {
  const datasets::NamedDataset& d = datasets::dataset_or_throw(o.name);
  datasets::FetchOptions fetch;
  fetch.cache_dir = o.cache_dir;
  fetch.mirror = o.mirror;
  const std::string dir = datasets::fetch_dataset(d, fetch);
  std::cout << d.name << ": " << dir << "\n";
  print_terms(d, std::cout);
}

void path(const DatasetsOptions& o) {
  const datasets::NamedDataset& d = datasets::dataset_or_throw(o.name);
  if (!datasets::is_cached(d, o.cache_dir)) {
    throw Error("dataset " + d.name + " is not downloaded (" + datasets::dataset_dir(d, o.cache_dir) +
                "); partita datasets download " + d.name);
  }
  std::cout << datasets::dataset_dir(d, o.cache_dir) << "\n";
}

}  // namespace

void add_datasets_command(CLI::App& app, const GlobalOptions&) {
  auto o = std::make_shared<DatasetsOptions>();
  CLI::App* cmd = app.add_subcommand("datasets", "the named public datasets: list, download, path");
  cmd->require_subcommand(1);
  cmd->add_option("--cache-dir", o->cache_dir,
                  std::string("the dataset cache [default: $") + datasets::kCacheEnv +
                      ", else $XDG_CACHE_HOME/partita/datasets, else ~/.cache/partita/datasets]");
  cmd->add_option("--mirror", o->mirror,
                  std::string("base URL serving every file as MIRROR/NAME/FILE instead of its publisher [default: $") +
                      datasets::kMirrorEnv + "]");
  CLI::App* l = cmd->add_subcommand("list", "every named dataset with its format, source, licence and citation");
  l->callback([o] { list(*o); });
  CLI::App* d = cmd->add_subcommand("download", "download, check and unpack a dataset into the cache");
  d->add_option("name", o->name, "dataset name (partita datasets list)")->required();
  d->callback([o] { download(*o); });
  CLI::App* p = cmd->add_subcommand("path", "print where a downloaded dataset is (an error if it is not)");
  p->add_option("name", o->name, "dataset name")->required();
  p->callback([o] { path(*o); });
  // `datasets --cache-dir X list` and `datasets list --cache-dir X` alike.
  for (CLI::App* sub : {l, d, p}) sub->fallthrough();
}

}  // namespace partita::cli
