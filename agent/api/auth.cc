#include "agent/api/auth.h"

#include <grpc/grpc_security_constants.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <sys/stat.h>

#include <cctype>
#include <cstdio>

#include "agent/common/files.h"

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
  auto text = ReadWholeFile(path, 4096);
  if (!text) return text.error();
  auto token = FromSecret(*text);
  if (!token) return MakeError(token.error().code, path + ": " + token.error().message);
  return token;
}

bool BearerToken::Matches(std::string_view presented) const {
  const auto digest = Sha256(presented);
  return CRYPTO_memcmp(digest.data(), digest_.data(), digest.size()) == 0;
}

AuthDecision Authorizer::Decide(Access access, const Credentials& credentials) const {
  if (transport_ == Transport::kUnixSocket) return {true, "unix socket", ""};
  if (credentials.authorization) {
    // A credential that was sent must be right, even where none is needed: a wrong token is a mistake
    // (or a probe) that the caller should hear about.
    const std::string_view header = *credentials.authorization;
    if (!StartsWithIgnoringCase(header, kBearerScheme)) {
      return {false, "", "authorization metadata: expected 'Bearer TOKEN'"};
    }
    if (!token_) return {false, "", "bearer tokens are not accepted by this agent (no api.token_file)"};
    if (!token_->Matches(header.substr(kBearerScheme.size()))) return {false, "", "invalid bearer token"};
    return {true, "token", ""};
  }
  if (credentials.verified_client_certificate) return {true, "certificate", ""};
  if (access == Access::kRead && tcp_read_open_) return {true, "anonymous", ""};
  return {false, "",
          std::string(access == Access::kMutate ? "mutating calls" : "calls") +
              " over TCP need a client certificate from the configured CA or a bearer token"};
}

grpc::Status Authorizer::Check(const grpc::ServerContext& context, Access access, std::string* identity) const {
  Credentials credentials;
  std::string common_name;
  if (const auto auth = context.auth_context()) {
    credentials.verified_client_certificate = !auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME).empty();
    for (const auto& name : auth->FindPropertyValues(GRPC_X509_CN_PROPERTY_NAME)) {
      common_name.assign(name.data(), name.size());
    }
  }
  const auto& metadata = context.client_metadata();
  std::string authorization;
  if (auto it = metadata.find("authorization"); it != metadata.end()) {
    authorization.assign(it->second.data(), it->second.size());
    credentials.authorization = authorization;
  }
  AuthDecision decision = Decide(access, credentials);
  if (!decision.allowed) return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, decision.refusal);
  if (identity) {
    *identity = decision.identity;
    if (decision.identity == "certificate" && !common_name.empty()) *identity += " CN=" + common_name;
  }
  return grpc::Status::OK;
}

}  // namespace nvmeadapt::api
