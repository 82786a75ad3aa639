#include "runtime/tls/roles.h"

#include <openssl/objects.h>
#include <openssl/x509.h>

#include "base/error.h"

namespace partita::runtime::tls {

namespace {

// A subject field by NID as text; "" if absent.
std::string subject_text(X509* cert, int nid) {
  if (cert == nullptr) return "";
  const X509_NAME* name = X509_get_subject_name(cert);
  const int at = X509_NAME_get_index_by_NID(name, nid, -1);
  if (at < 0) return "";
  const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, at));
  if (data == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)),
                     static_cast<size_t>(ASN1_STRING_length(data)));
}

}  // namespace

const char* role_name(MemberRole role) { return role == MemberRole::node ? "node" : "user"; }

MemberRole parse_role(const std::string& text, const std::string& what) {
  if (text == "node") return MemberRole::node;
  if (text == "user") return MemberRole::user;
  throw UsageError(what + " '" + text + "': a certificate's role is node (daemons, processes that run actors on "
                   "the nodes) or user (clients of the head)");
}

std::optional<MemberRole> certificate_role(X509* cert) {
  const std::string role = subject_text(cert, NID_organizationalUnitName);
  if (role == "node") return MemberRole::node;
  if (role == "user") return MemberRole::user;
  return std::nullopt;
}

std::string certificate_name(X509* cert) { return subject_text(cert, NID_commonName); }

std::string no_role_message(const std::string& name, const std::string& where) {
  const std::string shown = name.empty() ? "NAME" : name;
  return "the certificate '" + name + "'" + (where.empty() ? "" : " (" + where + ")") +
         " carries no role (it was issued before certificates had one): issue it again with `partita cluster cert " +
         shown + " --role node` (daemons and processes that run actors on the nodes) or `--role user` (clients of "
         "the head); the CA stays";
}

}  // namespace partita::runtime::tls
