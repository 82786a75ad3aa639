// SHA-256 of files (OpenSSL's EVP digest): what the registry records for each file a
// publisher serves, so a download is known to be the publisher's bytes.
#pragma once

#include <string>

namespace partita::datasets {

// The file's SHA-256 as 64 lowercase hex digits; Error naming the file if it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace partita::datasets
