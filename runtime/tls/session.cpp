#include "runtime/tls/session.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <optional>

namespace partita::runtime::tls {

namespace {

// OpenSSL's socket BIO writes with write(2): a peer that hung up would raise SIGPIPE and
// end the process. This one sends with MSG_NOSIGNAL (the broken connection is then an
// error of this session only); the rest is the socket BIO's behaviour.
int bio_write(BIO* bio, const char* data, int bytes) {
  const ssize_t n = ::send(static_cast<int>(BIO_get_fd(bio, nullptr)), data, static_cast<size_t>(bytes), MSG_NOSIGNAL);
  BIO_clear_retry_flags(bio);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_write(bio);
  return static_cast<int>(n);
}

int bio_read(BIO* bio, char* data, int bytes) {
  const ssize_t n = ::recv(static_cast<int>(BIO_get_fd(bio, nullptr)), data, static_cast<size_t>(bytes), 0);
  BIO_clear_retry_flags(bio);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_read(bio);
  return static_cast<int>(n);
}

const BIO_METHOD* no_signal_socket() {
  static BIO_METHOD* method = [] {
    const BIO_METHOD* socket = BIO_s_socket();
    BIO_METHOD* m = BIO_meth_new(BIO_TYPE_SOCKET, "partita socket (MSG_NOSIGNAL)");
    BIO_meth_set_write(m, bio_write);
    BIO_meth_set_read(m, bio_read);
    BIO_meth_set_puts(m, BIO_meth_get_puts(socket));
    BIO_meth_set_ctrl(m, BIO_meth_get_ctrl(socket));
    BIO_meth_set_create(m, BIO_meth_get_create(socket));
    BIO_meth_set_destroy(m, BIO_meth_get_destroy(socket));
    return m;
  }();
  return method;
}

}  // namespace

Session::Session(std::shared_ptr<const Credentials> credentials, int fd, Role role, Admits admits)
    : credentials_(std::move(credentials)), ssl_(SSL_new(credentials_->context())), role_(role), admits_(admits) {
  BIO* bio = ssl_ != nullptr ? BIO_new(no_signal_socket()) : nullptr;
  if (bio == nullptr) {
    SSL_free(ssl_);
    throw Error("cannot start a TLS session: " + openssl_errors());
  }
  BIO_set_fd(bio, fd, BIO_NOCLOSE);
  SSL_set_bio(ssl_, bio, bio);
  if (role == Role::client) {
    SSL_set_connect_state(ssl_);
  } else {
    SSL_set_accept_state(ssl_);
  }
}

Session::~Session() { SSL_free(ssl_); }

void Session::on_no_progress(int result, const char* doing, bool handshaking) {
  const int error = SSL_get_error(ssl_, result);
  if (error == SSL_ERROR_WANT_READ) {
    wants_ = POLLIN;
    return;
  }
  if (error == SSL_ERROR_WANT_WRITE) {
    wants_ = POLLOUT;
    return;
  }
  std::string reason;
  if (error == SSL_ERROR_ZERO_RETURN) {
    reason = "the peer closed the TLS session";
  } else if (error == SSL_ERROR_SYSCALL) {
    const int err = errno;
    reason = ERR_peek_error() != 0 ? openssl_errors()
             : err != 0             ? std::string(std::strerror(err))
                                    : "the peer closed the connection";
  } else {
    reason = openssl_errors();
    const long verify = SSL_get_verify_result(ssl_);
    if (handshaking && verify != X509_V_OK) {
      reason += " (certificate: " + std::string(X509_verify_cert_error_string(verify)) + ")";
    }
  }
  ERR_clear_error();
  // OpenSSL's words for a peer that answered with something other than TLS.
  if (handshaking && (reason.find("wrong version number") != std::string::npos ||
                      reason.find("packet length too long") != std::string::npos ||
                      reason.find("unknown protocol") != std::string::npos)) {
    reason = "the peer does not speak TLS: it is not a Partita process with TLS (another program, or a Partita "
             "process started with --insecure)";
  }
  if (handshaking) throw HandshakeFailed(std::string("TLS handshake failed: ") + reason);
  throw SessionClosed(std::string(doing) + ": " + reason);
}

bool Session::handshake() {
  if (established_) return true;
  ERR_clear_error();
  const int result = SSL_do_handshake(ssl_);
  if (result == 1) {
    check_peer_role();
    established_ = true;
    wants_ = 0;
    return true;
  }
  on_no_progress(result, "handshake", true);
  return false;
}

void Session::check_peer_role() {
  X509* cert = SSL_get0_peer_certificate(ssl_);
  const std::string name = certificate_name(cert);
  const std::optional<MemberRole> role = certificate_role(cert);
  if (!role) throw RoleRefused(no_role_message(name, "the peer's"));
  peer_role_ = *role;
  if (*role == MemberRole::node) return;
  if (role_ == Role::client) {
    throw RoleRefused("the server's certificate '" + name + "' has role " + role_name(*role) +
                      " (only a node serves a cluster's ports)");
  }
  if (admits_ == Admits::nodes) {
    throw RoleRefused("the certificate '" + name + "' has role " + role_name(*role) +
                      ": this port admits node certificates only (a user reaches the head's port, and there "
                      "submits, queries and stops jobs)");
  }
}

std::string Session::peer_name() const {
  X509* cert = SSL_get0_peer_certificate(ssl_);
  if (cert == nullptr) return "";
  char cn[256] = {0};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof(cn));
  return cn;
}

size_t Session::write_some(const void* data, size_t bytes) {
  if (bytes == 0) return 0;
  ERR_clear_error();
  size_t written = 0;
  const int result = SSL_write_ex(ssl_, data, bytes, &written);
  if (result == 1) return written;
  on_no_progress(result, "TLS write", false);
  return 0;
}

size_t Session::read_some(void* data, size_t bytes) {
  if (bytes == 0) return 0;
  ERR_clear_error();
  size_t got = 0;
  const int result = SSL_read_ex(ssl_, data, bytes, &got);
  if (result == 1) return got;
  on_no_progress(result, "TLS read", false);
  return 0;
}

bool Session::buffered() const { return SSL_has_pending(ssl_) == 1; }

}  // namespace partita::runtime::tls
