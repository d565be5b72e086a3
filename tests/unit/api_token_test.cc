// SPDX-License-Identifier: Apache-2.0
// Who may call what: the Authorizer's decisions for every transport, access and credential, and the
// bearer token's loading rules.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "agent/api/auth.h"

namespace nvmeadapt::api {
namespace {

constexpr std::string_view kSecret = "0123456789abcdef-secret";

constexpr std::string_view kReadSecret = "fedcba9876543210-reader";

// The admin token kSecret, the read-only token kReadSecret, certificate "operator" is admin.
Authorizer Tcp(bool read_open) {
  TcpCredentialPolicy policy;
  policy.admin_token = *BearerToken::FromSecret(kSecret);
  policy.read_token = *BearerToken::FromSecret(kReadSecret);
  policy.admin_certificate_names = {"operator"};
  policy.read_open = read_open;
  return Authorizer(Transport::kTcp, std::move(policy));
}

Credentials Token(std::string_view header) { return Credentials{false, header, {}, std::nullopt}; }
Credentials Certificate(std::vector<std::string> names) {
  return Credentials{true, std::nullopt, std::move(names), std::nullopt};
}
Credentials Peer(uid_t uid, bool admin) { return Credentials{false, std::nullopt, {}, UnixPeer{4242, uid, admin}}; }

TEST(Authorizer, UnixSocketPeersHaveTheRoleTheirCredentialsGive) {
  const Authorizer unix_socket("nvme-adapt-admin");
  const AuthDecision admin = unix_socket.Decide(Access::kMutate, Peer(0, true));
  EXPECT_TRUE(admin.allowed);
  EXPECT_EQ(admin.role, Role::kAdmin);
  EXPECT_EQ(admin.identity, "unix uid=0 pid=4242") << "audit lines name the peer";
  const AuthDecision reader = unix_socket.Decide(Access::kMutate, Peer(1000, false));
  EXPECT_FALSE(reader.allowed);
  EXPECT_TRUE(reader.authenticated) << "PERMISSION_DENIED, not UNAUTHENTICATED";
  EXPECT_NE(reader.refusal.find("unix uid=1000 pid=4242 is read-only"), std::string::npos) << reader.refusal;
  EXPECT_NE(reader.refusal.find("nvme-adapt-admin"), std::string::npos) << reader.refusal;
  EXPECT_TRUE(unix_socket.Decide(Access::kRead, Peer(1000, false)).allowed);
  // A connection whose credentials were not recorded is read-only, never more.
  EXPECT_FALSE(unix_socket.Decide(Access::kMutate, {}).allowed);
  EXPECT_TRUE(unix_socket.Decide(Access::kRead, {}).allowed);
}

TEST(Authorizer, TheReadOnlyTokenAndOtherCertificatesMayOnlyRead) {
  const Authorizer auth = Tcp(false);
  const std::string header = "Bearer " + std::string(kReadSecret);  // Credentials points into it
  const Credentials read_token = Token(header);
  EXPECT_TRUE(auth.Decide(Access::kRead, read_token).allowed);
  const AuthDecision refused = auth.Decide(Access::kMutate, read_token);
  EXPECT_FALSE(refused.allowed);
  EXPECT_TRUE(refused.authenticated);
  EXPECT_EQ(refused.identity, "token (read-only)");
  const Credentials stranger = Certificate({"someone-else", "someone.example"});
  EXPECT_TRUE(auth.Decide(Access::kRead, stranger).allowed);
  EXPECT_FALSE(auth.Decide(Access::kMutate, stranger).allowed);
  const AuthDecision by_san = auth.Decide(Access::kMutate, Certificate({"cn-other", "operator"}));
  EXPECT_TRUE(by_san.allowed) << "a subject alternative name on the allow-list makes the certificate admin";
  EXPECT_EQ(by_san.identity, "certificate operator (admin)");
}

TEST(Authorizer, ReplacedTokensTakeEffectForTheNextCall) {
  Authorizer auth = Tcp(false);
  EXPECT_TRUE(auth.Decide(Access::kMutate, Token("Bearer " + std::string(kSecret))).allowed);
  TcpCredentialPolicy rotated;
  rotated.admin_token = *BearerToken::FromSecret("rotated-admin-token-000");
  auth.Replace(std::move(rotated));
  EXPECT_FALSE(auth.Decide(Access::kMutate, Token("Bearer " + std::string(kSecret))).allowed);
  EXPECT_TRUE(auth.Decide(Access::kMutate, Token("Bearer rotated-admin-token-000")).allowed);
}

TEST(Authorizer, TcpMutationsNeedACertificateOrTheToken) {
  for (bool read_open : {false, true}) {
    const Authorizer auth = Tcp(read_open);
    const AuthDecision none = auth.Decide(Access::kMutate, {});
    EXPECT_FALSE(none.allowed);
    EXPECT_EQ(none.refusal, "mutating calls over TCP need a client certificate from the configured CA or a bearer token");
    EXPECT_TRUE(auth.Decide(Access::kMutate, Certificate({"operator"})).allowed);
    EXPECT_EQ(auth.Decide(Access::kMutate, Certificate({"operator"})).identity, "certificate operator (admin)");
    const std::string header = "Bearer " + std::string(kSecret);
    EXPECT_TRUE(auth.Decide(Access::kMutate, Token(header)).allowed);
    EXPECT_EQ(auth.Decide(Access::kMutate, Token(header)).identity, "token (admin)");
  }
}

TEST(Authorizer, TheSchemeIsCaseInsensitiveTheTokenIsNot) {
  const Authorizer auth = Tcp(false);
  EXPECT_TRUE(auth.Decide(Access::kMutate, Token("bearer " + std::string(kSecret))).allowed);
  EXPECT_TRUE(auth.Decide(Access::kMutate, Token("BEARER " + std::string(kSecret))).allowed);
  EXPECT_FALSE(auth.Decide(Access::kMutate, Token("Bearer 0123456789ABCDEF-secret")).allowed);
  EXPECT_FALSE(auth.Decide(Access::kMutate, Token("Bearer " + std::string(kSecret) + "x")).allowed);
  EXPECT_FALSE(auth.Decide(Access::kMutate, Token("Bearer " + std::string(kSecret.substr(1)))).allowed);
  EXPECT_EQ(auth.Decide(Access::kMutate, Token("Basic dXNlcjpwYXNz")).refusal,
            "authorization metadata: expected 'Bearer TOKEN'");
}

TEST(Authorizer, AWrongTokenIsRefusedEvenWhereNoneIsNeededAndEvenWithACertificate) {
  const Authorizer auth = Tcp(true);
  EXPECT_TRUE(auth.Decide(Access::kRead, {}).allowed);
  const AuthDecision wrong = auth.Decide(Access::kRead, Token("Bearer wrong-token-0123456789"));
  EXPECT_FALSE(wrong.allowed);
  EXPECT_EQ(wrong.refusal, "invalid bearer token");
  EXPECT_FALSE(
      auth.Decide(Access::kMutate, Credentials{true, "Bearer wrong-token-0123456789", {"operator"}, std::nullopt})
          .allowed);
}

TEST(Authorizer, ReadsNeedCredentialsUnlessOpened) {
  EXPECT_FALSE(Tcp(false).Decide(Access::kRead, {}).allowed);
  EXPECT_TRUE(Tcp(false).Decide(Access::kRead, Certificate({"anyone"})).allowed);
  EXPECT_EQ(Tcp(true).Decide(Access::kRead, {}).identity, "anonymous");
}

TEST(Authorizer, WithoutATokenFileNoTokenIsAccepted) {
  const Authorizer auth(Transport::kTcp, TcpCredentialPolicy{std::nullopt, std::nullopt, {}, true});
  const AuthDecision decision = auth.Decide(Access::kMutate, Token("Bearer " + std::string(kSecret)));
  EXPECT_FALSE(decision.allowed);
  EXPECT_EQ(decision.refusal,
            "bearer tokens are not accepted by this agent (no api.token_file or api.read_token_file)");
}

TEST(BearerToken, SecretRules) {
  EXPECT_TRUE(BearerToken::FromSecret(std::string(kSecret) + "\n"));
  EXPECT_TRUE(BearerToken::FromSecret(std::string(kSecret) + "\n")->Matches(kSecret)) << "trailing newline trimmed";
  EXPECT_EQ(BearerToken::FromSecret("short").error().message, "token shorter than 16 characters");
  EXPECT_EQ(BearerToken::FromSecret("0123456789 abcdefgh").error().message,
            "token contains whitespace or control characters");
}

class TokenFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = "/tmp/nvme-adapt-token-XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& text, mode_t mode) {
    const std::string path = dir_ + "/token";
    std::ofstream(path) << text;
    chmod(path.c_str(), mode);
    return path;
  }
  std::string dir_;
};

TEST_F(TokenFile, APrivateFileLoads) {
  auto token = BearerToken::Load(Write(std::string(kSecret) + "\n", 0600));
  ASSERT_TRUE(token) << token.error().message;
  EXPECT_TRUE(token->Matches(kSecret));
  EXPECT_TRUE(BearerToken::Load(Write(std::string(kSecret), 0640))) << "group-readable is allowed";
}

TEST_F(TokenFile, AFileOtherUsersCanReadIsRefused) {
  const std::string path = Write(std::string(kSecret), 0604);
  auto token = BearerToken::Load(path);
  ASSERT_FALSE(token);
  EXPECT_EQ(token.error().message, path + ": other users can access the token file (mode 0604); chmod 0600 it");
}

TEST_F(TokenFile, AMissingOrEmptyFileIsAnErrorNamingIt) {
  auto missing = BearerToken::Load(dir_ + "/none");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  const std::string path = Write("\n", 0600);
  auto empty = BearerToken::Load(path);
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().message, path + ": token shorter than 16 characters");
}

// Read again (SIGHUP): emptying or removing the file is how an operator revokes a token, so it must not be
// an error that keeps the old token valid.
TEST_F(TokenFile, RereadRevokesTheTokenOfAnEmptiedOrRemovedFile) {
  const std::string path = Write(std::string(kSecret) + "\n", 0600);
  auto present = BearerToken::Reread(path);
  ASSERT_TRUE(present) << present.error().message;
  ASSERT_TRUE(*present);
  EXPECT_TRUE((*present)->Matches(kSecret));

  Write(" \n", 0600);
  auto emptied = BearerToken::Reread(path);
  ASSERT_TRUE(emptied) << emptied.error().message;
  EXPECT_FALSE(*emptied) << "an emptied token file still gives a token";

  std::filesystem::remove(path);
  auto removed = BearerToken::Reread(path);
  ASSERT_TRUE(removed) << removed.error().message;
  EXPECT_FALSE(*removed) << "a removed token file still gives a token";

  const std::string open_to_all = Write(std::string(kSecret), 0604);
  EXPECT_FALSE(BearerToken::Reread(open_to_all)) << "a refused file is an error (the caller keeps the old token)";
  EXPECT_FALSE(BearerToken::Reread(Write("short", 0600))) << "a too short token is an error, not a revocation";
}

}  // namespace
}  // namespace nvmeadapt::api
