#include "datasets/sha256.h"

#include <openssl/evp.h>

#include <memory>
#include <vector>

#include "base/error.h"
#include "base/file_util.h"

#include <unistd.h>

namespace partita::datasets {

std::string sha256_file(const std::string& path) {
  ScopedFd fd = open_for_reading(path);
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) throw Error("SHA-256: OpenSSL cannot start a digest");
  std::vector<char> buffer(1 << 20);
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n < 0) throw file_error(path, "cannot read: " + errno_text());
    if (n == 0) break;
    EVP_DigestUpdate(ctx.get(), buffer.data(), static_cast<size_t>(n));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &length);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

}  // namespace partita::datasets
