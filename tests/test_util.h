// Helpers shared by the tests: temporary folders, the real datasets, running the CLI.
#pragma once

#include <gtest/gtest.h>

#include <spdlog/spdlog.h>

#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

// Expects `part` inside `text` (strings or anything std::string takes), showing both.
#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "'" << (part) << "' not in: " << (text)

namespace partita::testing {

// Whether process `pid` still runs (a zombie does not).
bool process_runs(int pid);

// A fresh folder under $TMPDIR, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// <name> in $PARTITA_DATA_DIR when set, else in the CMake option PARTITA_DATA_DIR
// (kDataDir, test_paths.h; default ../shared/data); fails the test if it is missing.
std::string dataset_path(const std::string& name);
// tests/corpus/<name>: the collection of broken inputs.
std::string corpus_path(const std::string& name);

void write_text(const std::string& path, const std::string& text);
std::string read_text(const std::string& path);

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
// Runs the partita binary with `args`, killing it after timeout_s seconds.
CommandResult run_partita(const std::vector<std::string>& args, int timeout_s = 120);

// A disk that fills up: a tmpfs of `bytes` mounted at `dir` (created) until destruction.
// Mounting needs root; when it fails, mounted() is false and why() says why, for a skip.
class SmallDisk {
 public:
  SmallDisk(const std::string& dir, int64_t bytes);
  ~SmallDisk();
  SmallDisk(const SmallDisk&) = delete;
  SmallDisk& operator=(const SmallDisk&) = delete;
  bool mounted() const { return mounted_; }
  const std::string& why() const { return why_; }

 private:
  std::string dir_;
  bool mounted_ = false;
  std::string why_;
};

// Captures what spdlog's default logger logs at `level` and above while alive, a record a
// line in `pattern` ("%l %v": its level, then its text).
class LogCapture {
 public:
  explicit LogCapture(spdlog::level::level_enum level = spdlog::level::trace, const std::string& pattern = "%l %v");
  ~LogCapture();
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  std::string text() const { return stream_.str(); }
  std::vector<std::string> lines() const;

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::ostringstream stream_;
};

}  // namespace partita::testing
