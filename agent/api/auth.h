// Who may call what. Unix socket callers are trusted: the socket's mode and group already decided who can
// connect. TCP callers need a client certificate from the configured CA or the bearer token for mutating
// calls, and for read-only calls too unless those are opened (READ_ACCESS_OPEN).
#pragma once

#include <grpcpp/server_context.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "agent/common/result.h"

namespace nvmeadapt::api {

// A secret compared in constant time: both sides are hashed, so neither the length nor a common prefix
// of a wrong guess shows in the time the comparison takes.
class BearerToken {
 public:
  // Reads the token (trailing whitespace trimmed). Refuses a file other users can access, an empty token
  // and one shorter than kMinLength.
  static Result<BearerToken> Load(const std::string& path);
  static Result<BearerToken> FromSecret(std::string_view secret);
  bool Matches(std::string_view presented) const;

  static constexpr size_t kMinLength = 16;

 private:
  std::array<uint8_t, 32> digest_{};
};

enum class Access { kRead, kMutate };
enum class Transport { kUnixSocket, kTcp };

struct Credentials {
  bool verified_client_certificate = false;
  std::optional<std::string_view> authorization;  // the "authorization" metadata, if sent
};

struct AuthDecision {
  bool allowed = false;
  std::string identity;  // for audit logs: "unix socket", "token", "certificate CN=...", "anonymous"
  std::string refusal;   // why not, when !allowed
};

class Authorizer {
 public:
  Authorizer(Transport transport, std::optional<BearerToken> token, bool tcp_read_open)
      : transport_(transport), token_(std::move(token)), tcp_read_open_(tcp_read_open) {}

  // The decision alone, for tests.
  AuthDecision Decide(Access access, const Credentials& credentials) const;
  // OK, or UNAUTHENTICATED with the reason. `identity` receives who the caller is.
  grpc::Status Check(const grpc::ServerContext& context, Access access, std::string* identity) const;

 private:
  Transport transport_;
  std::optional<BearerToken> token_;
  bool tcp_read_open_;
};

}  // namespace nvmeadapt::api
