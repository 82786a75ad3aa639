#include "base/system_memory.h"

#include <fstream>
#include <limits>
#include <string>

namespace partita {

namespace {

// A "Field:   N kB" line of /proc/meminfo, in bytes; 0 when absent.
uint64_t meminfo_bytes(const std::string& field) {
  std::ifstream in("/proc/meminfo");
  std::string key;
  while (in >> key) {
    if (key == field + ":") {
      uint64_t kib = 0;
      in >> kib;
      return kib * 1024;
    }
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

}  // namespace

uint64_t total_memory_bytes() { return meminfo_bytes("MemTotal"); }
uint64_t available_memory_bytes() { return meminfo_bytes("MemAvailable"); }

}  // namespace partita
