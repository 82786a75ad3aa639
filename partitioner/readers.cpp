#include "partitioner/readers.h"

#include "base/error.h"

namespace partita {

Dataset read_dataset(const std::string& format, const std::string& path, const ReadOptions& options) {
  if (format == "edgelist") return read_edgelist(path, options);
  if (options.remap_ids || options.undirected) {
    throw UsageError(std::string(options.remap_ids ? "remapping ids" : "making the graph undirected") +
                     " applies to edge lists only (format edgelist), not to format '" + format + "'");
  }
  if (format == "linqs") return read_linqs(path, options);
  if (format == "npy") return read_npy_folder(path);
  if (format == "triples") return read_triples(path);
  if (format == "movielens") return read_movielens(path);
  if (format == "movielens100k") return read_movielens_100k(path);
  if (format == "ntriples") return read_ntriples(path, options);
  throw UsageError("unknown dataset format '" + format +
                   "' (expected one of: linqs, npy, edgelist, triples, movielens, movielens100k, ntriples)");
}

}  // namespace partita
