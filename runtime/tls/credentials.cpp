#include "runtime/tls/credentials.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>

#include "base/file_util.h"
#include "runtime/loopback.h"

namespace partita::runtime::tls {

namespace {

// The process's credentials and their lock, made on first use (a static initializer of
// another file may come first) and never destroyed (OpenSSL's exit handler may run before
// static destructors would).
struct ProcessCredentials {
  std::mutex mutex;
  std::shared_ptr<const Credentials> value;
};
ProcessCredentials& process_state() {
  static auto* state = new ProcessCredentials();
  return *state;
}

struct BioFree {
  void operator()(BIO* b) const { BIO_free_all(b); }
};

// A context with every setting of the header, without an identity yet.
SSL_CTX* new_context() {
  SSL_CTX* ctx = SSL_CTX_new(TLS_method());
  if (ctx == nullptr) throw Error("cannot create a TLS context: " + openssl_errors());
  const bool ok = SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) == 1 &&
                  SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) == 1 &&
                  SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256") == 1;
  if (!ok) {
    SSL_CTX_free(ctx);
    throw Error("cannot configure TLS 1.3 with AES-128-GCM: " + openssl_errors());
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  SSL_CTX_set_verify_depth(ctx, 2);
  SSL_CTX_set_num_tickets(ctx, 0);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
  // Non-blocking sockets: a write may take part of the buffer (and be retried from
  // elsewhere); reading ahead saves a system call per record header.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_read_ahead(ctx, 1);
  return ctx;
}

}  // namespace

std::string openssl_errors() {
  std::string text;
  while (unsigned long code = ERR_get_error()) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof(buffer));
    if (!text.empty()) text += "; ";
    text += buffer;
  }
  return text.empty() ? "no detail" : text;
}

Credentials::~Credentials() { SSL_CTX_free(context_); }

std::shared_ptr<const Credentials> Credentials::from_pem(const PemIdentity& identity, std::string origin) {
  SSL_CTX* ctx = new_context();
  auto fail = [&](const std::string& what) {
    const std::string detail = openssl_errors();
    SSL_CTX_free(ctx);
    throw Error(origin + ": " + what + ": " + detail);
  };
  std::unique_ptr<BIO, BioFree> ca_bio(BIO_new_mem_buf(identity.ca_cert.data(), static_cast<int>(identity.ca_cert.size())));
  X509* ca = ca_bio ? PEM_read_bio_X509(ca_bio.get(), nullptr, nullptr, nullptr) : nullptr;
  if (ca == nullptr) fail(std::string(kCaCertFile) + " is not a PEM certificate");
  const int added = X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca);
  X509_free(ca);
  if (added != 1) fail("cannot trust the CA certificate");
  std::unique_ptr<BIO, BioFree> cert_bio(BIO_new_mem_buf(identity.cert.data(), static_cast<int>(identity.cert.size())));
  X509* cert = cert_bio ? PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr) : nullptr;
  if (cert == nullptr) fail(std::string(kCertFile) + " is not a PEM certificate");
  const std::optional<MemberRole> role = certificate_role(cert);
  const std::string name = certificate_name(cert);
  const int used = SSL_CTX_use_certificate(ctx, cert);
  X509_free(cert);
  if (used != 1) fail(std::string("cannot use ") + kCertFile);
  if (!role) {
    SSL_CTX_free(ctx);
    throw Error(no_role_message(name, (std::filesystem::path(origin) / kCertFile).string()));
  }
  std::unique_ptr<BIO, BioFree> key_bio(BIO_new_mem_buf(identity.key.data(), static_cast<int>(identity.key.size())));
  EVP_PKEY* key = key_bio ? PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr) : nullptr;
  if (key == nullptr) fail(std::string(kKeyFile) + " is not a PEM private key (an encrypted key is not supported)");
  const int key_used = SSL_CTX_use_PrivateKey(ctx, key);
  EVP_PKEY_free(key);
  if (key_used != 1 || SSL_CTX_check_private_key(ctx) != 1) {
    fail(std::string(kKeyFile) + " does not belong to " + kCertFile);
  }
  // The chain this process presents, built once here. Left to itself, OpenSSL builds it in
  // every handshake (verifying this process's own certificate against the store, the CA's
  // signature included) and sends the CA's certificate with it, which the peer parses and
  // already holds: 30% of a mutual handshake's CPU (~1.13 -> ~0.78 ms, BENCHMARKS.md,
  // "Fuzzing", sixth round). Without the root, a certificate the CA issued goes alone; an
  // intermediate would still be sent. A certificate that does not chain to the CA is left to
  // its peers to refuse, as before.
  SSL_CTX_set_mode(ctx, SSL_MODE_NO_AUTO_CHAIN);
  if (SSL_CTX_build_cert_chain(ctx, SSL_BUILD_CHAIN_FLAG_NO_ROOT | SSL_BUILD_CHAIN_FLAG_IGNORE_ERROR) == 0) {
    fail(std::string("cannot build the certificate chain of ") + kCertFile);
  }
  ERR_clear_error();  // an ignored verification error of the build
  return std::shared_ptr<const Credentials>(new Credentials(ctx, std::move(origin), *role, name));
}

std::shared_ptr<const Credentials> Credentials::load(const std::filesystem::path& dir) {
  for (const char* file : {kCaCertFile, kCertFile, kKeyFile}) {
    if (!std::filesystem::exists(dir / file)) {
      throw NoCredentials("no TLS credentials: " + (dir / file).string() +
                          " is missing (create them with `partita cluster init DIR` or `partita cluster cert NAME`, "
                          "or pass --insecure for a loopback-only plaintext cluster)");
    }
  }
  check_key_permissions(dir / kKeyFile);
  PemIdentity pem{read_file((dir / kCaCertFile).string()), read_file((dir / kCertFile).string()),
                  read_file((dir / kKeyFile).string())};
  return from_pem(pem, dir.string());
}

std::shared_ptr<const Credentials> Credentials::ephemeral() {
  return from_pem(make_authority("partita in-memory CA", "this-process").identity, "an in-memory CA");
}

std::filesystem::path credentials_dir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("PARTITA_TLS_DIR"); env != nullptr && *env != '\0') return env;
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0') {
    throw NoCredentials("no TLS credentials folder: HOME is not set (pass --tls-dir DIR or set PARTITA_TLS_DIR)");
  }
  return std::filesystem::path(home) / ".partita" / "tls";
}

void check_key_permissions(const std::filesystem::path& key) {
  struct stat st {};
  if (::stat(key.c_str(), &st) != 0) throw Error("cannot read " + key.string() + ": " + std::strerror(errno));
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw InsecureKeyFile(key.string() + ": private key readable by group or others (mode " + mode +
                          "); restrict it with `chmod 600 " + key.string() + "`");
  }
}

void set_process_credentials(std::shared_ptr<const Credentials> credentials) {
  ProcessCredentials& state = process_state();
  std::lock_guard lock(state.mutex);
  state.value = std::move(credentials);
}

std::shared_ptr<const Credentials> process_credentials() {
  ProcessCredentials& state = process_state();
  std::lock_guard lock(state.mutex);
  return state.value;
}

MemberRole process_role() {
  const std::shared_ptr<const Credentials> credentials = process_credentials();
  return credentials ? credentials->role() : MemberRole::node;
}

void require_node_role(const std::string& what) {
  const std::shared_ptr<const Credentials> credentials = process_credentials();
  if (!credentials || credentials->role() == MemberRole::node) return;
  throw Error(what + ": this needs a node's certificate, and this process's ('" + credentials->name() + "' in " +
              credentials->origin() + ") has role " + role_name(credentials->role()) +
              "; use a node's credentials (--tls-dir, PARTITA_TLS_DIR), or issue some with `partita cluster cert NAME "
              "--role node`");
}

void check_plaintext_bind(const std::string& host, const std::string& what) {
  if (process_credentials()) return;
  if (!is_loopback_host(host)) {
    throw PlaintextNotLoopback(what + " '" + host + "': plaintext (--insecure) listens on loopback addresses only; "
                               "give TLS credentials (partita cluster init) to listen on other addresses");
  }
}

}  // namespace partita::runtime::tls
