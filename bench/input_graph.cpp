#include "bench/input_graph.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "partitioner/readers.h"

namespace partita::bench {

namespace fs = std::filesystem;

std::string partitioned_graph(const Workdir& workdir, const std::string& folder, const std::string& params,
                              const PartitionOptions& options, const std::function<Dataset()>& graph) {
  const std::string dir = workdir.path() + "/" + folder, stamp = folder + "-params.txt";
  if (workdir.has(stamp, params, folder + "/META.json")) return dir;
  WriteOptions write;
  write.overwrite = true;
  partition_dataset(graph(), options, dir, write);
  workdir.mark(stamp, params);
  return dir;
}

std::string rmat_in_two_random_parts(const Workdir& workdir, int64_t num_nodes, double avg_degree, int64_t feature_dim,
                                     uint64_t seed) {
  std::ostringstream params;
  params << "rmat nodes " << num_nodes << " degree " << avg_degree << " features " << feature_dim << " seed " << seed
         << " random 2\n";
  PartitionOptions options;
  options.num_parts = 2;
  options.method = PartitionMethod::kRandom;
  options.seed = seed;
  return partitioned_graph(workdir, "parts", params.str(), options, [&] {
    RmatOptions rmat;
    rmat.num_nodes = num_nodes;
    rmat.avg_degree = avg_degree;
    rmat.feature_dim = feature_dim;
    rmat.seed = seed;
    return generate_rmat(rmat);
  });
}

std::string sbm_in_metis_parts(const Workdir& workdir, int64_t num_nodes, int num_parts, uint64_t seed) {
  PartitionOptions options;
  options.num_parts = num_parts;
  options.seed = seed;
  const std::string params = "sbm nodes " + std::to_string(num_nodes) + " seed " + std::to_string(seed) + " parts " +
                             std::to_string(num_parts) + "\n";
  return partitioned_graph(workdir, "parts", params, options, [&] {
    SbmOptions sbm;
    sbm.num_nodes = num_nodes;
    sbm.num_classes = 4;
    sbm.feature_dim = 16;
    sbm.seed = seed;
    return generate_sbm(sbm);
  });
}

Dataset input_or_rmat(const std::string& input, const RmatOptions& rmat) {
  return input.empty() ? generate_rmat(rmat) : read_npy_folder(input);
}

void check_input_graph(const std::string& dir, const std::vector<std::string>& required) {
  if (!fs::is_directory(dir)) throw UsageError("--input: " + dir + " is not a folder");
  std::vector<std::string> wanted{kNpyFolderMarker};
  wanted.insert(wanted.end(), required.begin(), required.end());
  for (const std::string& file : wanted) {
    if (!fs::is_regular_file(fs::path(dir) / file)) {
      throw UsageError("--input: " + dir + " has no " + file + " (an npy folder, as `partita generate` writes, " +
                       "with edge_index.npy" + (required.empty() ? "" : " and features, labels and a training split") +
                       ")");
    }
  }
}

std::string input_fingerprint(const std::string& dir) {
  std::vector<std::string> lines;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const auto modified = entry.last_write_time().time_since_epoch();
    lines.push_back(entry.path().filename().string() + " " + std::to_string(entry.file_size()) + " " +
                    std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(modified).count()));
  }
  std::sort(lines.begin(), lines.end());
  std::string text = fs::absolute(dir).string() + "\n";
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

void forget_stale_partitions(const std::string& input, const std::string& work_dir,
                             const std::vector<std::string>& partition_dirs) {
  const fs::path stamp = fs::path(work_dir) / "input-fingerprint.txt";
  const std::string now = input_fingerprint(input);
  std::stringstream had;
  had << std::ifstream(stamp).rdbuf();
  if (had.str() == now) return;
  for (const std::string& dir : partition_dirs) fs::remove_all(dir);
  fs::create_directories(work_dir);
  std::ofstream(stamp) << now;
}

}  // namespace partita::bench
