#include "tools/head_address.h"

#include <cctype>
#include <cstdlib>
#include <fstream>

#include "base/error.h"
#include "base/file_util.h"
#include "tools/commands.h"

namespace partita::cli {

namespace fs = std::filesystem;

namespace {

fs::path address_file() { return partita_home() / "head_address"; }

// The first line of the file, without white space; "" when there is none.
std::string remembered() {
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0') return "";
  std::ifstream in(address_file());
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) line.erase(line.begin());
  return line;
}

std::string from_environment() {
  const char* env = std::getenv("PARTITA_ADDRESS");
  return env != nullptr ? env : "";
}

}  // namespace

fs::path partita_home() {
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0') throw Error("HOME is not set: no ~/.partita folder");
  return fs::path(home) / ".partita";
}

std::string head_address(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (std::string env = from_environment(); !env.empty()) return env;
  if (std::string file = remembered(); !file.empty()) return file;
  return kDefaultHeadAddress;
}

bool head_address_given(const std::string& flag) {
  return !flag.empty() || !from_environment().empty() || !remembered().empty();
}

void remember_head_address(const std::string& address) {
  fs::create_directories(partita_home());
  write_file_atomically(address_file().string(), address + "\n");
}

void forget_head_address(const std::string& address) {
  if (remembered() != address) return;
  std::error_code ignored;
  fs::remove(address_file(), ignored);
}

}  // namespace partita::cli
