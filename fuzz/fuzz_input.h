// What the fuzz targets share: how one fuzz input becomes the file, or the folder of files,
// that a reader opens, and what counts as a finding.
//
// Readers take paths, so each input is written to a scratch folder on tmpfs (/dev/shm, else
// $TMPDIR) that belongs to the fuzzing process; writing there costs a few microseconds, far
// less than the readers' own work. A reader of several files (a LINQS folder, an npy folder,
// triples) gets one input cut at kFileSeparator: the i-th piece becomes its i-th file, and
// an empty piece leaves that file out, so the fuzzer explores missing files too. The seeds
// (fuzz/make_seeds.cpp) are written in the same form, so every piece starts as a real file.
//
// A finding is anything but success or partita::Error (or a subclass): a crash, a sanitizer
// report, a hang (libFuzzer's -timeout), an allocation beyond -malloc_limit_mb, or another
// exception escaping (std::bad_alloc, std::out_of_range, a YAML or JSON library exception),
// because the house rule is that bad input gets an Error naming the problem. So the targets
// catch partita::Error only.
#pragma once

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace partita::fuzz {

// Readers and servers log what they refuse or skip (warnings a user needs); thousands of
// inputs a second would spend their time logging. Set before main.
inline const bool kLogsOff = (spdlog::set_level(spdlog::level::off), true);

// Between the files of one input. Long enough that no seed holds it by chance.
constexpr std::string_view kFileSeparator = "\n%%partita-fuzz-file%%\n";

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The pieces of `input` between separators (one piece if there is none).
inline std::vector<std::string_view> split_files(std::string_view input) {
  std::vector<std::string_view> pieces;
  for (;;) {
    const size_t at = input.find(kFileSeparator);
    pieces.push_back(input.substr(0, at));
    if (at == std::string_view::npos) return pieces;
    input.remove_prefix(at + kFileSeparator.size());
  }
}

// The files of the multi-file readers, in the order of an input's pieces (the seeds are
// packed in this order too). A reader of a new format (N-Triples, MovieLens, ...) gets its
// list here, a target fuzz/fuzz_<format>.cpp, a line in fuzz/CMakeLists.txt and seeds in
// fuzz/make_seeds.cpp.
inline const std::vector<std::string> kLinqsFiles = {"g.content", "g.cites"};
inline const std::vector<std::string> kTriplesFiles = {"train.txt", "valid.txt", "test.txt"};
// read_ntriples: the graph (named by fuzz_ntriples.cpp: g.nt or g.nt.gz), then the splits.
inline const std::vector<std::string> kNtriplesFiles = {"g.nt", "trainingSet.tsv", "testSet.tsv"};
inline const std::vector<std::string> kMovielensFiles = {"movies.csv", "ratings.csv"};
// partitioner/npy_folder.cpp's kFormatFiles, most used first.
inline const std::vector<std::string> kNpyFolderFiles = {
    "edge_index.npy", "x.npy",         "y.npy",          "train_idx.npy",      "val_idx.npy",
    "test_idx.npy",   "node_type.npy", "edge_type.npy",  "types.json",         "edge_attr.npy",
    "node_time.npy",  "edge_time.npy", "val_edge_index.npy", "val_edge_type.npy", "test_edge_index.npy",
    "test_edge_type.npy"};

// The process's scratch folder, removed at exit. Not thread-safe: libFuzzer runs one input
// at a time per process.
//
// Inputs overwrite the files of the previous one in place rather than emptying the
// folder first: unlinking and creating a file per input was a fifth of a single-file
// target's time (perf, fuzz_array_file). And the folder remembers what it holds: a file
// whose bytes are what the previous input wrote there is left as it is, and a file known to
// be absent is not removed again. A mutation usually changes one piece of a multi-file
// input, so most of the sixteen files of an npy folder were written (or unlinked) again
// with the same bytes (perf, fuzz_npy_folder: the harness's writes and unlinks beside the
// reader's opens). The readers write nothing into their input folder, so after write(),
// remove() or write_files() the folder holds exactly the files they named, with those bytes.
class ScratchDir {
 public:
  static ScratchDir& get() {
    static ScratchDir dir;
    return dir;
  }
  const std::string& path() const { return path_; }

  // Makes path()/name hold `bytes` (replacing what an earlier input left there) and
  // returns that path.
  std::string write(const std::string& name, std::string_view bytes) {
    const std::string file = path_ + "/" + name;
    auto known = held_.find(name);
    if (known != held_.end() && known->second.bytes == bytes) return file;
    if (known == held_.end()) {
      const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd < 0) broken("cannot create", file);
      known = held_.emplace(name, Held{fd, {}}).first;
    }
    Held& held = known->second;
    bool written = true;
    for (size_t done = 0; written && done < bytes.size();) {
      const ssize_t n = ::pwrite(held.fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
      written = n > 0;
      done += written ? static_cast<size_t>(n) : 0;
    }
    if (!written || (bytes.size() < held.bytes.size() && ::ftruncate(held.fd, static_cast<off_t>(bytes.size())) != 0)) {
      broken("cannot write", file);
    }
    held.bytes.assign(bytes.data(), bytes.size());
    return file;
  }
  // Makes sure path()/name does not exist.
  void remove(const std::string& name) {
    auto known = held_.find(name);
    if (known != held_.end()) {
      ::close(known->second.fd);
      ::unlink((path_ + "/" + name).c_str());
      held_.erase(known);
    }
  }
  // Writes pieces[i] as names[i] and removes the others of `names` (an empty piece, or
  // one beyond names, leaves its file out). Returns the folder.
  const std::string& write_files(const std::vector<std::string_view>& pieces, const std::vector<std::string>& names) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (i < pieces.size() && !pieces[i].empty()) {
        write(names[i], pieces[i]);
      } else {
        remove(names[i]);
      }
    }
    return path_;
  }
  // The same with the input's pieces (split_files).
  const std::string& write_files(std::string_view input, const std::vector<std::string>& names) {
    return write_files(split_files(input), names);
  }

 private:
  // A fresh, empty folder: held_ (nothing) is then what it holds.
  ScratchDir() {
    const char* base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : std::getenv("TMPDIR");
    path_ = std::string(base != nullptr ? base : "/tmp") + "/partita-fuzz-" + std::to_string(::getpid());
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);  // a dead process's of the same id
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    for (const auto& [name, held] : held_) ::close(held.fd);
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  [[noreturn]] static void broken(const char* what, const std::string& file) {
    std::fprintf(stderr, "fuzz: %s %s\n", what, file.c_str());
    std::abort();  // the harness is broken, not the reader: stop loudly
  }
  // A file the folder holds: its bytes, and a descriptor kept open on it, so that the next
  // input's bytes go in with a pwrite (and an ftruncate when shorter), without the path
  // lookup, open and close of each write (perf, fuzz_npy_folder: a third of its input's
  // time was the harness's writes).
  struct Held {
    int fd;
    std::string bytes;
  };
  std::string path_;
  std::map<std::string, Held> held_;  // file name -> what it holds, for every file there
};

}  // namespace partita::fuzz
