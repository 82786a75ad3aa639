#include "runtime/tls/certificates.h"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "base/error.h"
#include "base/file_util.h"
#include "runtime/tls/credentials.h"

namespace partita::runtime::tls {

namespace {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using Bio = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;

constexpr long kDay = 24L * 3600;
constexpr long kCaDays = 3650;
constexpr long kCertDays = 730;

[[noreturn]] void fail(const std::string& doing) { throw Error("cannot " + doing + ": " + openssl_errors()); }

Key new_key() {
  Key key(EVP_EC_gen("P-256"));
  if (!key) fail("generate a P-256 key");
  return key;
}

std::string to_pem(X509* cert) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) fail("encode a certificate");
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

std::string to_pem(EVP_PKEY* key) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    fail("encode a private key");
  }
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

Cert cert_from_pem(const std::string& pem, const std::string& what) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Cert cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!cert) fail("read " + what);
  return cert;
}

Key key_from_pem(const std::string& pem, const std::string& what) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Key key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!key) fail("read " + what);
  return key;
}

void add_extension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) fail(std::string("make the certificate extension ") + OBJ_nid2sn(nid));
  const int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  if (ok != 1) fail(std::string("add the certificate extension ") + OBJ_nid2sn(nid));
}

// A certificate for `subject_key` named `cn`, signed by `issuer_key` (self-signed when
// `issuer` is null): the CA's without a role (`role` null), a member's with its role in the
// subject's OU and the extended key usage of that role (roles.h).
Cert make_cert(EVP_PKEY* subject_key, const std::string& cn, X509* issuer, EVP_PKEY* issuer_key,
               const MemberRole* role, long days) {
  const bool ca = role == nullptr;
  Cert cert(X509_new());
  if (!cert || X509_set_version(cert.get(), 2) != 1) fail("create a certificate");
  // A random 127-bit serial, as RFC 5280 asks of CAs (positive, at most 20 bytes).
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof(serial)) != 1) fail("draw a serial number");
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof(serial), nullptr);
  const bool serial_ok = bn != nullptr && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get())) != nullptr;
  BN_free(bn);
  if (!serial_ok) fail("set a serial number");
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);  // an hour of clock skew
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), days * kDay);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>("partita cluster"), -1,
                             -1, 0);
  if (!ca && X509_NAME_add_entry_by_txt(name, "OU", MBSTRING_UTF8,
                                        reinterpret_cast<const unsigned char*>(role_name(*role)), -1, -1, 0) != 1) {
    fail("give the certificate '" + cn + "' its role");
  }
  if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(cn.c_str()), -1,
                                 -1, 0) != 1) {
    fail("name a certificate '" + cn + "'");
  }
  X509* signer = issuer != nullptr ? issuer : cert.get();
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(signer)) != 1 ||
      X509_set_pubkey(cert.get(), subject_key) != 1) {
    fail("fill a certificate");
  }
  add_extension(cert.get(), signer, NID_basic_constraints, ca ? "critical,CA:TRUE,pathlen:0" : "critical,CA:FALSE");
  add_extension(cert.get(), signer, NID_key_usage, ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature");
  if (!ca) {
    add_extension(cert.get(), signer, NID_ext_key_usage,
                  *role == MemberRole::node ? "serverAuth,clientAuth" : "clientAuth");
  }
  add_extension(cert.get(), signer, NID_subject_key_identifier, "hash");
  add_extension(cert.get(), signer, NID_authority_key_identifier, "keyid:always");
  if (X509_sign(cert.get(), issuer_key, EVP_sha256()) <= 0) fail("sign a certificate");
  return cert;
}

// Writes `text` to a new file `path` (it must not exist) with `mode`.
void write_new_file(const std::filesystem::path& path, const std::string& text, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) throw Error("cannot create " + path.string() + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      throw Error("cannot write " + path.string() + ": " + std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  // The mode given to open is masked by the umask; a key must end 0600 whatever it is.
  if (::fchmod(fd, mode) != 0 || ::fsync(fd) != 0 || ::close(fd) != 0) {
    throw Error("cannot write " + path.string() + ": " + std::strerror(errno));
  }
}

void write_identity(const std::filesystem::path& dir, const PemIdentity& identity) {
  write_new_file(dir / kCaCertFile, identity.ca_cert, 0644);
  write_new_file(dir / kCertFile, identity.cert, 0644);
  write_new_file(dir / kKeyFile, identity.key, 0600);
}

void make_private_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("cannot create " + dir.string() + ": " + ec.message());
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);
  if (ec) throw Error("cannot restrict " + dir.string() + " to its owner: " + ec.message());
}

}  // namespace

void check_identity_name(const std::string& name) {
  const bool ok = !name.empty() && name.size() <= 64 && name != "." && name != ".." &&
                  name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") ==
                      std::string::npos;
  if (!ok) throw UsageError("certificate name '" + name + "': use 1 to 64 letters, digits, '.', '_' or '-'");
}

PemAuthority make_authority(const std::string& cluster, const std::string& node_name) {
  Key ca_key = new_key();
  Cert ca = make_cert(ca_key.get(), cluster, nullptr, ca_key.get(), nullptr, kCaDays);
  Key key = new_key();
  const MemberRole role = MemberRole::node;
  Cert cert = make_cert(key.get(), node_name, ca.get(), ca_key.get(), &role, kCertDays);
  return {to_pem(ca_key.get()), {to_pem(ca.get()), to_pem(cert.get()), to_pem(key.get())}};
}

PemIdentity issue(const std::string& ca_cert_pem, const std::string& ca_key_pem, const std::string& name,
                  MemberRole role) {
  Cert ca = cert_from_pem(ca_cert_pem, "the CA certificate");
  Key ca_key = key_from_pem(ca_key_pem, "the CA key");
  if (X509_check_private_key(ca.get(), ca_key.get()) != 1) {
    throw Error("the CA key does not belong to the CA certificate");
  }
  Key key = new_key();
  Cert cert = make_cert(key.get(), name, ca.get(), ca_key.get(), &role, kCertDays);
  return {ca_cert_pem, to_pem(cert.get()), to_pem(key.get())};
}

void init_cluster(const std::filesystem::path& dir, const std::string& node_name) {
  check_identity_name(node_name);
  for (const char* file : {kCaCertFile, kCaKeyFile}) {
    if (std::filesystem::exists(dir / file)) {
      throw Error(dir.string() + " already holds a cluster CA (" + file + "); remove it to start another cluster");
    }
  }
  const PemAuthority authority = make_authority("partita cluster CA", node_name);
  make_private_dir(dir);
  write_new_file(dir / kCaKeyFile, authority.ca_key, 0600);
  write_identity(dir, authority.identity);
}

void issue_to_folder(const std::filesystem::path& ca_dir, const std::string& name, MemberRole role,
                     const std::filesystem::path& out) {
  check_identity_name(name);
  const std::filesystem::path ca_key = ca_dir / kCaKeyFile;
  if (!std::filesystem::exists(ca_key)) {
    throw Error(ca_key.string() + ": no CA key here (create one with `partita cluster init DIR`)");
  }
  check_key_permissions(ca_key);
  if (std::filesystem::exists(out)) throw Error(out.string() + " already exists; choose another folder");
  const PemIdentity identity = issue(read_file((ca_dir / kCaCertFile).string()), read_file(ca_key.string()), name, role);
  make_private_dir(out);
  write_identity(out, identity);
}

}  // namespace partita::runtime::tls
