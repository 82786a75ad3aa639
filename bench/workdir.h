// A benchmark's working folder: the one the user gave (kept, so that the next run reuses
// what was generated there) or a temporary one, removed when the benchmark ends.
#pragma once

#include <string>

namespace partita::bench {

class Workdir {
 public:
  // `given` ("" for a temporary folder under $TMPDIR or /tmp, named after `name` and the
  // process id). Creates the folder.
  Workdir(const std::string& given, const std::string& name);
  ~Workdir();  // removes a temporary folder
  Workdir(const Workdir&) = delete;
  Workdir& operator=(const Workdir&) = delete;

  const std::string& path() const { return path_; }
  // Whether inputs generated from `params` are here: the file `stamp` holds them and
  // `product` (a path inside the folder) exists. mark() records them once generated.
  bool has(const std::string& stamp, const std::string& params, const std::string& product) const;
  void mark(const std::string& stamp, const std::string& params) const;

 private:
  std::string path_;
  bool temporary_;
};

}  // namespace partita::bench
