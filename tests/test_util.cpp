#include "test_util.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "base/subprocess.h"
#include "test_paths.h"

namespace partita::testing {

namespace fs = std::filesystem;

TempDir::TempDir() {
  // Named after the test, so that a folder left behind (a test killed at its timeout) says whose it is.
  std::string owner = "partita-test-";
  if (const auto* test = ::testing::UnitTest::GetInstance()->current_test_info()) {
    owner += std::string(test->test_suite_name()) + "." + test->name() + "-";
  }
  for (char& c : owner) c = c == '/' ? '_' : c;  // parameterised names hold '/'
  std::string pattern = (fs::temp_directory_path() / (owner + "XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
  fs::remove_all(path_, ec);
}

namespace {
// A job naming a dataset (data.dataset: cora) reads the local copy in $PARTITA_DATA_DIR
// (datasets/dataset_cache.h): exported here from the tree's option when unset, so a test
// binary run by hand, and the partita processes it starts, read the same copies as under ctest.
const bool kDataDirExported = [] {
  if (std::getenv("PARTITA_DATA_DIR") == nullptr && kDataDir[0] != '\0') ::setenv("PARTITA_DATA_DIR", kDataDir, 0);
  return true;
}();
}  // namespace

std::string dataset_path(const std::string& name) {
  const char* env = std::getenv("PARTITA_DATA_DIR");
  std::string root = env != nullptr ? env : kDataDir;
  std::string path = root + "/" + name;
  if (!fs::exists(path)) {
    ADD_FAILURE() << "dataset " << path << " not found: set PARTITA_DATA_DIR to the folder "
                  << "holding cora/ and fb15k-237/";
  }
  return path;
}

std::string corpus_path(const std::string& name) { return std::string(kTestCorpus) + "/" + name; }

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

bool process_runs(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  const size_t close = text.rfind(')');  // the name may hold anything; the state follows it
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CommandResult run_partita(const std::vector<std::string>& args, int timeout_s) {
  std::vector<std::string> argv{kPartitaBinary};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessResult r = run_process(argv, timeout_s);
  if (r.timed_out) ADD_FAILURE() << "partita did not finish within " << timeout_s << " s";
  return {r.exit_code, r.out, r.err};
}

SmallDisk::SmallDisk(const std::string& dir, int64_t bytes) : dir_(dir) {
  std::filesystem::create_directories(dir);
  const ProcessResult r =
      run_process({"/bin/mount", "-t", "tmpfs", "-o", "size=" + std::to_string(bytes), "tmpfs", dir}, 30);
  mounted_ = r.exit_code == 0;
  why_ = mounted_ ? "" : "cannot mount a small tmpfs here (needs root): " + r.err;
}

SmallDisk::~SmallDisk() {
  if (mounted_) run_process({"/bin/umount", "-l", dir_}, 30);
}

LogCapture::LogCapture(spdlog::level::level_enum level, const std::string& pattern)
    : previous_(spdlog::default_logger()) {
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_);
  sink->set_pattern(pattern);
  auto logger = std::make_shared<spdlog::logger>("capture", sink);
  logger->set_level(level);
  spdlog::set_default_logger(logger);
}

LogCapture::~LogCapture() { spdlog::set_default_logger(previous_); }

std::vector<std::string> LogCapture::lines() const {
  std::vector<std::string> out;
  std::istringstream in(stream_.str());
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace partita::testing

namespace {
// Tests keep stderr for failures: progress and info lines from the code under test would
// bury them.
struct QuietLogs {
  QuietLogs() { spdlog::set_level(spdlog::level::warn); }
} quiet_logs;
}  // namespace
