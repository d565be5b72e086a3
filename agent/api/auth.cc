// SPDX-License-Identifier: Apache-2.0
#include "agent/api/auth.h"

#include <grpc/grpc_security_constants.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>

#include "common/files.h"

namespace nvmeadapt::api {
namespace {

constexpr std::string_view kBearerScheme = "bearer ";

bool StartsWithIgnoringCase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
  }
  return true;
}

std::array<uint8_t, 32> Sha256(std::string_view text) {
  std::array<uint8_t, 32> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data());
  return digest;
}

}  // namespace

Result<BearerToken> BearerToken::FromSecret(std::string_view secret) {
  while (!secret.empty() && std::isspace(static_cast<unsigned char>(secret.back()))) secret.remove_suffix(1);
  if (secret.size() < kMinLength) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "token shorter than " + std::to_string(kMinLength) + " characters");
  }
  for (char c : secret) {
    if (!std::isgraph(static_cast<unsigned char>(c))) {
      return MakeError(ErrorCode::kInvalidArgument, "token contains whitespace or control characters");
    }
  }
  BearerToken token;
  token.digest_ = Sha256(secret);
  return token;
}

Result<BearerToken> BearerToken::Load(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return SysError("stat", path, errno);
  if ((st.st_mode & S_IRWXO) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return MakeError(ErrorCode::kPermissionDenied, path + ": other users can access the token file (mode " +
                                                       mode + "); chmod 0600 it");
  }
  NA_ASSIGN_OR_RETURN(auto text, ReadWholeFile(path, 4096));
  auto token = FromSecret(text);
  if (!token) return MakeError(token.error().code, path + ": " + token.error().message);
  return token;
}

Result<std::optional<BearerToken>> BearerToken::Reread(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::optional<BearerToken>();
    return SysError("stat", path, errno);
  }
  NA_ASSIGN_OR_RETURN(auto text, ReadWholeFile(path, 4096));
  if (std::all_of(text.begin(), text.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); })) {
    return std::optional<BearerToken>();
  }
  NA_ASSIGN_OR_RETURN(auto token, Load(path));
  return std::optional<BearerToken>(token);
}

bool BearerToken::Matches(std::string_view presented) const {
  const auto digest = Sha256(presented);
  return CRYPTO_memcmp(digest.data(), digest_.data(), digest.size()) == 0;
}

std::shared_ptr<const TcpCredentialPolicy> Authorizer::policy() const {
  std::lock_guard lock(mutex_);
  return policy_;
}

void Authorizer::Replace(TcpCredentialPolicy policy) {
  auto replacement = std::make_shared<const TcpCredentialPolicy>(std::move(policy));
  std::lock_guard lock(mutex_);
  policy_ = std::move(replacement);
}

AuthDecision Authorizer::Decide(Access access, const Credentials& credentials) const {
  AuthDecision decision;
  if (transport_ == Transport::kUnixSocket) {
    decision.authenticated = true;
    if (!credentials.unix_peer) {
      // The connection's credentials were not found: read-only, never more.
      decision.identity = "unix socket (peer unknown)";
    } else {
      const UnixPeer& peer = *credentials.unix_peer;
      decision.identity = "unix uid=" + std::to_string(peer.uid) + " pid=" + std::to_string(peer.pid);
      if (!peer.refusal.empty()) {
        decision.refusal = peer.refusal;
        decision.exhausted = true;
        return decision;
      }
      if (peer.admin) decision.role = Role::kAdmin;
    }
    if (access == Access::kMutate && decision.role != Role::kAdmin) {
      decision.refusal = decision.identity + " is read-only: mutating calls need root, the agent's user or a member of "
                         "api.unix_socket_admin_group (" + admin_group_ + ")";
      return decision;
    }
    decision.allowed = true;
    return decision;
  }

  const std::shared_ptr<const TcpCredentialPolicy> current = policy();
  const TcpCredentialPolicy& p = *current;
  if (credentials.authorization) {
    // A credential that was sent must be right, even where none is needed: a wrong token is a mistake
    // (or a probe) that the caller should hear about.
    const std::string_view header = *credentials.authorization;
    if (!StartsWithIgnoringCase(header, kBearerScheme)) {
      decision.refusal = "authorization metadata: expected 'Bearer TOKEN'";
      return decision;
    }
    if (!p.admin_token && !p.read_token) {
      decision.refusal = "bearer tokens are not accepted by this agent (no api.token_file or api.read_token_file)";
      return decision;
    }
    const std::string_view presented = header.substr(kBearerScheme.size());
    // Both comparisons run, so the time does not tell which token a guess was near.
    const bool admin = p.admin_token && p.admin_token->Matches(presented);
    const bool read = p.read_token && p.read_token->Matches(presented);
    if (!admin && !read) {
      decision.refusal = "invalid bearer token";
      return decision;
    }
    decision.authenticated = true;
    decision.role = admin ? Role::kAdmin : Role::kReadOnly;
    decision.identity = admin ? "token (admin)" : "token (read-only)";
  } else if (credentials.verified_client_certificate) {
    decision.authenticated = true;
    std::string shown = credentials.certificate_names.empty() ? "" : " CN=" + credentials.certificate_names.front();
    decision.identity = "certificate" + shown;
    for (const std::string& name : credentials.certificate_names) {
      if (std::find(p.admin_certificate_names.begin(), p.admin_certificate_names.end(), name) !=
          p.admin_certificate_names.end()) {
        decision.role = Role::kAdmin;
        decision.identity = "certificate " + name + " (admin)";
        break;
      }
    }
  } else if (access == Access::kRead && p.read_open) {
    decision.identity = "anonymous";
  } else {
    decision.refusal = std::string(access == Access::kMutate ? "mutating calls" : "calls") +
                       " over TCP need a client certificate from the configured CA or a bearer token";
    return decision;
  }
  if (access == Access::kMutate && decision.role != Role::kAdmin) {
    decision.refusal = decision.identity + " is read-only: mutating calls need the admin token or a certificate "
                       "named in api.tls.admin_certificate_names";
    return decision;
  }
  decision.allowed = true;
  return decision;
}

Credentials CredentialsOf(const grpc::AuthContext* auth,
                          const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                          std::string* authorization) {
  Credentials credentials;
  if (auth != nullptr) {
    credentials.verified_client_certificate = !auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME).empty();
    for (const char* property : {GRPC_X509_CN_PROPERTY_NAME, GRPC_X509_SAN_PROPERTY_NAME}) {
      for (const auto& name : auth->FindPropertyValues(property)) {
        std::string text(name.data(), name.size());
        if (std::find(credentials.certificate_names.begin(), credentials.certificate_names.end(), text) ==
            credentials.certificate_names.end()) {
          credentials.certificate_names.push_back(std::move(text));
        }
      }
    }
  }
  if (auto it = metadata.find("authorization"); it != metadata.end()) {
    authorization->assign(it->second.data(), it->second.size());
    credentials.authorization = *authorization;
  }
  return credentials;
}

grpc::Status Authorizer::Check(const grpc::ServerContext& context, Access access,
                               const std::optional<UnixPeer>& unix_peer, std::string* identity, Role* role) const {
  std::string authorization;
  const auto auth = context.auth_context();
  Credentials credentials = CredentialsOf(auth.get(), context.client_metadata(), &authorization);
  credentials.unix_peer = unix_peer;
  const AuthDecision decision = Decide(access, credentials);
  if (identity) *identity = decision.identity;
  if (role) *role = decision.role;
  if (!decision.allowed) {
    return grpc::Status(decision.exhausted       ? grpc::StatusCode::RESOURCE_EXHAUSTED
                        : decision.authenticated ? grpc::StatusCode::PERMISSION_DENIED
                                                 : grpc::StatusCode::UNAUTHENTICATED,
                        decision.refusal);
  }
  return grpc::Status::OK;
}

}  // namespace nvmeadapt::api
