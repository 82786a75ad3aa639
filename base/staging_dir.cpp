#include "base/staging_dir.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "base/error.h"

namespace partita {

namespace fs = std::filesystem;

namespace {

constexpr const char* kStagingSuffix = ".partita-tmp-";

// "out/" and "out" are the same target; the staging folder must be a sibling, not a child.
std::string without_trailing_slash(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

bool process_is_alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

// Staging folders of this target whose writer process no longer exists (killed runs).
void remove_abandoned_staging(const std::string& target) {
  fs::path t(target);
  std::error_code ec;
  std::string prefix = t.filename().string() + kStagingSuffix;
  for (const auto& entry : fs::directory_iterator(t.parent_path().empty() ? "." : t.parent_path(), ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    pid_t pid = static_cast<pid_t>(std::atol(name.c_str() + prefix.size()));
    if (pid > 0 && pid != ::getpid() && !process_is_alive(pid)) fs::remove_all(entry.path(), ec);
  }
}

}  // namespace

void StagingDir::check_target(const std::string& raw_target, bool overwrite, const std::string& marker) {
  std::string target = without_trailing_slash(raw_target);
  std::error_code ec;
  fs::path parent = fs::absolute(target, ec).parent_path();
  if (!fs::is_directory(parent, ec)) {
    throw file_error(target, "cannot create output: parent folder " + parent.string() + " does not exist");
  }
  if (::access(parent.c_str(), W_OK) != 0) {
    throw file_error(target, "cannot create output: parent folder " + parent.string() + " is not writable");
  }
  if (!fs::exists(target, ec)) return;
  if (!overwrite) throw file_error(target, "output folder already exists (pass --overwrite to replace it)");
  if (!fs::is_directory(target, ec)) throw file_error(target, "exists and is not a folder; not replacing it");
  if (!fs::is_empty(target, ec) && !fs::exists(fs::path(target) / marker, ec)) {
    throw file_error(target, "refusing to replace a folder without " + marker +
                                 ": it does not look like output of this command");
  }
}

StagingDir::StagingDir(const std::string& target, bool overwrite, const std::string& marker)
    : target_(without_trailing_slash(target)), overwrite_(overwrite), marker_(marker) {
  check_target(target_, overwrite_, marker_);
  remove_abandoned_staging(target_);
  std::error_code ec;
  path_ = target_ + kStagingSuffix + std::to_string(::getpid());
  fs::remove_all(path_, ec);
  if (!fs::create_directory(path_, ec)) {
    throw file_error(target_, "cannot create output folder: " + ec.message());
  }
}

StagingDir::~StagingDir() {
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
}

void StagingDir::commit() {
  check_target(target_, overwrite_, marker_);  // the target may have appeared meanwhile
  std::error_code ec;
  std::string old = target_ + ".partita-old-" + std::to_string(::getpid());
  bool replacing = fs::exists(target_, ec);
  if (replacing) {
    fs::rename(target_, old, ec);
    if (ec) throw file_error(target_, "cannot move the old folder aside: " + ec.message());
  }
  fs::rename(path_, target_, ec);
  if (ec) {
    std::error_code restore;
    if (replacing) fs::rename(old, target_, restore);
    throw file_error(target_, "cannot move the new output into place: " + ec.message());
  }
  committed_ = true;
  if (replacing) fs::remove_all(old, ec);
}

}  // namespace partita
