// Errors that reach the user. Every failure Partita reports is an Error whose message
// names what is wrong and where (file, line, field), so the CLI can print it as one line.
#pragma once

#include <stdexcept>
#include <string>

namespace partita {

// A runtime failure: bad input file, corrupt partition, I/O error. The CLI exits 1.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// The caller asked for something invalid (bad flag value, impossible option mix).
// The CLI exits 2, as for a parse error.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& what) : Error(what) {}
};

// "path:line: message", the shape compilers use, so editors can jump to it.
inline Error file_error(const std::string& path, long line, const std::string& message) {
  return Error(path + ":" + std::to_string(line) + ": " + message);
}
inline Error file_error(const std::string& path, const std::string& message) {
  return Error(path + ": " + message);
}

}  // namespace partita
