// SPDX-License-Identifier: Apache-2.0
// Who may call what, in two roles: read-only and admin (every call). On the Unix socket the socket's mode and
// group decide who can connect at all, and the peer's credentials (SO_PEERCRED) decide the role: root, the
// agent's user and members of api.unix_socket_admin_group are admin. On TCP a caller shows the admin or the
// read-only bearer token, or a client certificate from the configured CA (admin when its name is in
// api.tls.admin_certificate_names); read-only calls may be opened to anyone (READ_ACCESS_OPEN).
#pragma once

#include <grpcpp/server_context.h>

#include <sys/types.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace nvmeadapt::api {

// A secret compared in constant time: both sides are hashed, so neither the length nor a common prefix
// of a wrong guess shows in the time the comparison takes.
class BearerToken {
 public:
  // Reads the token (trailing whitespace trimmed). Refuses a file other users can access, an empty token
  // and one shorter than kMinLength.
  static Result<BearerToken> Load(const std::string& path);
  // Load for a file read again while running: a file that was removed or emptied (whitespace only) revokes
  // its token (nullopt) rather than being an error that would leave the old token valid.
  static Result<std::optional<BearerToken>> Reread(const std::string& path);
  static Result<BearerToken> FromSecret(std::string_view secret);
  bool Matches(std::string_view presented) const;

  static constexpr size_t kMinLength = 16;

 private:
  std::array<uint8_t, 32> digest_{};
};

enum class Access { kRead, kMutate };
enum class Transport { kUnixSocket, kTcp };
enum class Role { kReadOnly, kAdmin };

// A Unix socket peer as the kernel reported it when it connected (SO_PEERCRED, SO_PEERGROUPS).
struct UnixPeer {
  pid_t pid = 0;
  uid_t uid = 0;
  bool admin = false;  // root, the agent's user, or a member of api.unix_socket_admin_group
  std::string refusal;  // set: a connection over the socket's caps, whose every call is refused with this
};

struct Credentials {
  bool verified_client_certificate = false;
  std::optional<std::string_view> authorization;  // the "authorization" metadata, if sent
  std::vector<std::string> certificate_names;      // common name and subject alternative names
  std::optional<UnixPeer> unix_peer;               // Unix socket: who connected (none: unknown)
};

struct AuthDecision {
  bool allowed = false;
  bool authenticated = false;  // refused for want of credentials (UNAUTHENTICATED) or of a role (PERMISSION_DENIED)
  Role role = Role::kReadOnly;
  std::string identity;  // for audit logs: "unix uid=0 pid=42", "token (admin)", "certificate CN=...", "anonymous"
  std::string refusal;   // why not, when !allowed
  bool exhausted = false;  // refused for a bound (RESOURCE_EXHAUSTED), whoever the caller is
};

// What TCP callers may present. Replaced whole when the files are read again (Authorizer::Replace).
struct TcpCredentialPolicy {
  std::optional<BearerToken> admin_token;
  std::optional<BearerToken> read_token;
  std::vector<std::string> admin_certificate_names;
  bool read_open = false;  // read-only calls need no credentials
};

class Authorizer {
 public:
  // Unix socket: the peer's role decides (`admin_group` names the group in refusals; empty: every peer is
  // admin).
  explicit Authorizer(std::string admin_group)
      : transport_(Transport::kUnixSocket), admin_group_(std::move(admin_group)) {}
  Authorizer(Transport transport, TcpCredentialPolicy policy)
      : transport_(transport), policy_(std::make_shared<const TcpCredentialPolicy>(std::move(policy))) {}

  // The decision alone, for tests.
  AuthDecision Decide(Access access, const Credentials& credentials) const;
  // OK, or UNAUTHENTICATED / PERMISSION_DENIED with the reason. `identity` receives who the caller is.
  // `unix_peer` is the connection's peer on the Unix socket.
  grpc::Status Check(const grpc::ServerContext& context, Access access, const std::optional<UnixPeer>& unix_peer,
                     std::string* identity, Role* role = nullptr) const;
  // Takes effect for the calls that start afterwards (SIGHUP re-reads the token files).
  void Replace(TcpCredentialPolicy policy);
  // The policy in force (a reload starts from it: a file it cannot read keeps that file's token).
  std::shared_ptr<const TcpCredentialPolicy> policy() const;

 private:

  Transport transport_;
  std::string admin_group_;
  mutable std::mutex mutex_;
  std::shared_ptr<const TcpCredentialPolicy> policy_;
};

// The credentials of a call: the certificate of its connection (verified by TLS) and its authorization
// metadata. `authorization` holds the header's bytes; Credentials points into it.
Credentials CredentialsOf(const grpc::AuthContext* auth,
                          const std::multimap<grpc::string_ref, grpc::string_ref>& metadata, std::string* authorization);

}  // namespace nvmeadapt::api
