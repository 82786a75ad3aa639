#include "base/staging_dir.h"

#include <unistd.h>

#include <filesystem>

#include "base/error.h"

namespace partita {

namespace fs = std::filesystem;

namespace {
// "out/" and "out" are the same target; the staging folder must be a sibling, not a child.
std::string without_trailing_slash(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}
}  // namespace

void StagingDir::check_target(const std::string& raw_target, bool overwrite) {
  std::string target = without_trailing_slash(raw_target);
  std::error_code ec;
  fs::path parent = fs::absolute(target, ec).parent_path();
  if (!fs::is_directory(parent, ec)) {
    throw file_error(target, "cannot create output: parent folder " + parent.string() + " does not exist");
  }
  if (::access(parent.c_str(), W_OK) != 0) {
    throw file_error(target, "cannot create output: parent folder " + parent.string() + " is not writable");
  }
  if (fs::exists(target, ec) && !overwrite) {
    throw file_error(target, "output folder already exists (pass --overwrite to replace it)");
  }
}

StagingDir::StagingDir(const std::string& target, bool overwrite)
    : target_(without_trailing_slash(target)), overwrite_(overwrite) {
  check_target(target, overwrite);
  std::error_code ec;
  path_ = target_ + ".partita-tmp-" + std::to_string(::getpid());
  fs::remove_all(path_, ec);
  if (!fs::create_directory(path_, ec)) {
    throw file_error(target, "cannot create output folder: " + ec.message());
  }
}

StagingDir::~StagingDir() {
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
}

void StagingDir::commit() {
  std::error_code ec;
  std::string old = target_ + ".partita-old-" + std::to_string(::getpid());
  bool replaced = false;
  if (fs::exists(target_, ec)) {
    if (!overwrite_) throw file_error(target_, "output folder appeared while writing");
    fs::rename(target_, old, ec);
    if (ec) throw file_error(target_, "cannot move the old folder aside: " + ec.message());
    replaced = true;
  }
  fs::rename(path_, target_, ec);
  if (ec) throw file_error(target_, "cannot move the new output into place: " + ec.message());
  committed_ = true;
  if (replaced) fs::remove_all(old, ec);
}

}  // namespace partita
