#include "bench/workdir.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace partita::bench {

namespace fs = std::filesystem;

Workdir::Workdir(const std::string& given, const std::string& name) : path_(given), temporary_(given.empty()) {
  if (temporary_) {
    const char* tmp = std::getenv("TMPDIR");
    path_ = std::string(tmp != nullptr ? tmp : "/tmp") + "/partita-" + name + "-" + std::to_string(::getpid());
  }
  fs::create_directories(path_);
}

Workdir::~Workdir() {
  std::error_code ec;
  if (temporary_) fs::remove_all(path_, ec);
}

bool Workdir::has(const std::string& stamp, const std::string& params, const std::string& product) const {
  if (!fs::exists(path_ + "/" + stamp) || !fs::exists(path_ + "/" + product)) return false;
  std::ifstream in(path_ + "/" + stamp);
  std::stringstream had;
  had << in.rdbuf();
  return had.str() == params;
}

void Workdir::mark(const std::string& stamp, const std::string& params) const {
  std::ofstream(path_ + "/" + stamp) << params;
}

}  // namespace partita::bench
