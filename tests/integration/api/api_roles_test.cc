// SPDX-License-Identifier: Apache-2.0
// Finding 6 of issue 15 over real sockets: authentication at the TCP transport for every service (health
// too; no reflection on TCP), the read-only and admin roles (a token each, an allow-list of certificate
// names, an admin group on the Unix socket apart from the socket's group), the anonymous stream share, and
// tokens and certificates taken up again without a restart.
#include <grpcpp/generic/generic_stub.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "tests/integration/api/api_test_support.h"

namespace nvmeadapt::testing {
namespace {

constexpr const char* kAdminGroup = "adm";  // base-passwd's, like kTestGroup

// One unary call by full method name with a raw request: the services this agent does not define itself.
grpc::Status RawCall(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                     const std::string& request, std::unique_ptr<grpc::ClientContext> context) {
  grpc::GenericStub generic(channel);
  grpc::CompletionQueue cq;
  grpc::Slice slice(request);
  grpc::ByteBuffer buffer(&slice, 1);
  auto call = generic.PrepareUnaryCall(context.get(), method, buffer, &cq);
  call->StartCall();
  grpc::ByteBuffer reply;
  grpc::Status status;
  call->Finish(&reply, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  cq.Next(&tag, &ok);
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  return status;
}

std::string HealthRequest() {
  const std::string service = "nvmeadapt.v1.AgentService";
  return std::string("\x0a", 1) + static_cast<char>(service.size()) + service;
}

// The first message of a reflection stream: a unary call to a streaming method still reaches the handler.
grpc::Status Reflection(const std::shared_ptr<grpc::Channel>& channel, std::unique_ptr<grpc::ClientContext> c) {
  return RawCall(channel, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                 std::string("\x3a\x00", 2), std::move(c));
}

class TcpRoles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    certs_ = new TempDir;
    MakeCertificates(certs_->path());
    WriteFile(*certs_ / "admin-token", "admin-token-0123456789abcdef\n", 0600);
    WriteFile(*certs_ / "read-token", "read-token-0123456789abcdef\n", 0600);
  }
  static void TearDownTestSuite() { delete certs_; }

  void Start(std::vector<std::string> admin_names, uint32_t reload_seconds = 60) {
    dir_ = std::make_unique<TempDir>();
    for (const char* file : {"ca.pem", "server.pem", "server.key", "admin-token", "read-token"}) {
      std::filesystem::copy_file(*certs_ / file, *dir_ / file);
    }
    v1::ApiConfig config = LoopbackTlsConfig(*dir_);
    config.mutable_tls()->set_reload_interval_seconds(reload_seconds);
    for (const auto& name : admin_names) config.mutable_tls()->add_admin_certificate_names(name);
    config.set_token_file(*dir_ / "admin-token");
    config.set_read_token_file(*dir_ / "read-token");
    server_ = MustStart(config, agent_);
    ASSERT_TRUE(server_);
  }
  std::unique_ptr<Connection> Client(const std::string& cert, const std::string& token_file) {
    return TlsClient(*certs_, server_->tcp_port(), cert, token_file);
  }
  grpc::Status SetPolicy(const Connection& c) {
    v1::SetPolicyResponse reply;
    return c->SetPolicy(c.Context().get(), AdaptiveGlobal(), &reply);
  }
  grpc::Status GetStatus(const Connection& c) {
    v1::GetStatusResponse reply;
    return c->GetStatus(c.Context().get(), {}, &reply);
  }

  static TempDir* certs_;
  std::unique_ptr<TempDir> dir_;
  FakeAgent agent_;
  std::unique_ptr<api::ApiServer> server_;
};

TempDir* TcpRoles::certs_ = nullptr;

TEST_F(TcpRoles, HealthOverTcpNeedsCredentialsLikeEveryOtherService) {
  Start({"operator"});
  auto anonymous = Client("", "");
  const grpc::Status health = RawCall(anonymous->client.channel(), "/grpc.health.v1.Health/Check", HealthRequest(),
                                      Deadline());
  EXPECT_EQ(health.error_code(), grpc::StatusCode::UNAUTHENTICATED) << health.error_message();
  auto reader = Client("", "read-token");
  const grpc::Status with_token =
      RawCall(reader->client.channel(), "/grpc.health.v1.Health/Check", HealthRequest(), reader->Context());
  EXPECT_TRUE(with_token.ok()) << with_token.error_message();
}

TEST_F(TcpRoles, ReflectionIsNotServedOverTcp) {
  Start({"operator"});
  auto anonymous = Client("", "");
  EXPECT_EQ(Reflection(anonymous->client.channel(), Deadline()).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  auto admin = Client("", "admin-token");
  EXPECT_EQ(Reflection(admin->client.channel(), admin->Context()).error_code(), grpc::StatusCode::UNIMPLEMENTED);
}

TEST_F(TcpRoles, TheReadOnlyTokenReadsAndIsDeniedMutations) {
  Start({"operator"});
  auto reader = Client("", "read-token");
  EXPECT_TRUE(GetStatus(*reader).ok());
  const grpc::Status denied = SetPolicy(*reader);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(denied.error_message().find("token (read-only) is read-only"), std::string::npos)
      << denied.error_message();
  EXPECT_TRUE(SetPolicy(*Client("", "admin-token")).ok());
}

TEST_F(TcpRoles, OnlyCertificatesOnTheAdminListMayMutate) {
  Start({"someone-else"});
  auto operator_cert = Client("client", "");  // CN=operator, from the CA, not on the list
  EXPECT_TRUE(GetStatus(*operator_cert).ok());
  EXPECT_EQ(SetPolicy(*operator_cert).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_FALSE(agent_.policy().policy().has_mode());
}

TEST_F(TcpRoles, TokensAreReadAgainOnReloadAndABadFileKeepsThePreviousOnes) {
  Start({"operator"});
  WriteFile(*dir_ / "admin-token", "rotated-admin-token-0123456789\n", 0600);
  EXPECT_TRUE(SetPolicy(*Client("", "admin-token")).ok()) << "before the reload the old token holds";
  ASSERT_TRUE(server_->Reload());
  EXPECT_EQ(SetPolicy(*Client("", "admin-token")).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  WriteFile(*certs_ / "rotated", "rotated-admin-token-0123456789\n", 0600);
  EXPECT_TRUE(SetPolicy(*Client("", "rotated")).ok());
  chmod((*dir_ / "admin-token").c_str(), 0644);
  const Status bad = server_->Reload();
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("api.token_file"), std::string::npos) << bad.error().message;
  EXPECT_TRUE(SetPolicy(*Client("", "rotated")).ok()) << "a refused reload keeps the running tokens";
}

TEST_F(TcpRoles, AReplacedClientCaIsTakenUpWithoutARestart) {
  Start({"operator"}, /*reload_seconds=*/1);
  EXPECT_TRUE(GetStatus(*Client("client", "")).ok());
  std::filesystem::copy_file(*certs_ / "other-ca.pem", *dir_ / "ca.pem",
                             std::filesystem::copy_options::overwrite_existing);
  // The watcher looks every second; a handshake with the old CA's certificate must start failing.
  bool refused = false;
  for (int i = 0; i < 40 && !refused; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    refused = GetStatus(*Client("client", "")).error_code() == grpc::StatusCode::UNAVAILABLE;
  }
  EXPECT_TRUE(refused) << "the old CA's client certificate was still accepted 4 s after the CA file changed";
  EXPECT_TRUE(GetStatus(*Client("rogue", "")).ok()) << "the new CA's certificate is accepted";
}

TEST(TcpLimits, AnonymousStreamsGetAQuarterOfTheSlots) {
  TempDir dir;
  WriteFile(dir / "token", "loopback-token-0123456789\n", 0600);
  FakeAgent agent;
  v1::ApiConfig config = InsecureLoopbackConfig();
  config.set_token_file(dir / "token");
  config.set_tcp_read_access(v1::READ_ACCESS_OPEN);
  config.set_max_watch_streams(4);
  auto server = MustStart(config, agent);
  ASSERT_TRUE(server);
  ctl::ClientOptions options;
  options.address = "127.0.0.1:" + std::to_string(server->tcp_port());
  options.insecure_loopback_tcp = true;
  auto anonymous = MustConnect(options);
  auto first_context = anonymous->Context();
  auto first = (*anonymous)->WatchEvents(first_context.get(), {});
  first->WaitForInitialMetadata();  // the slot is taken once the stream is open
  auto second_context = anonymous->Context();
  auto second = (*anonymous)->WatchEvents(second_context.get(), {});
  v1::Event event;
  EXPECT_FALSE(second->Read(&event));
  const grpc::Status refused = second->Finish();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(refused.error_message().find("anonymous"), std::string::npos) << refused.error_message();
  options.token_file = dir / "token";
  auto authenticated = MustConnect(options);
  auto third_context = authenticated->Context();
  auto third = (*authenticated)->WatchEvents(third_context.get(), {});
  third->WaitForInitialMetadata();
  EXPECT_EQ(server->open_streams(), 2u) << "the authenticated stream got a slot the anonymous one could not";
  // Without TLS no processor guards the transport, so health is not served there at all.
  EXPECT_EQ(RawCall(anonymous->client.channel(), "/grpc.health.v1.Health/Check", HealthRequest(), Deadline())
                .error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  first_context->TryCancel();
  third_context->TryCancel();
}

// Runs nvme-adaptctl as nobody with `groups`; returns its exit status and what it printed.
std::pair<int, std::string> CtlAsNobody(const std::vector<gid_t>& groups, const std::vector<std::string>& args) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return {-1, "pipe failed"};
  const pid_t child = fork();
  if (child == 0) {
    dup2(pipe_fds[1], 1);
    dup2(pipe_fds[1], 2);
    if (setgroups(groups.size(), groups.data()) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(100);
    std::vector<char*> argv{const_cast<char*>(NVME_ADAPTCTL)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(NVME_ADAPTCTL, argv.data());
    _exit(101);
  }
  close(pipe_fds[1]);
  std::string output;
  char buffer[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof buffer)) > 0;) output.append(buffer, static_cast<size_t>(n));
  close(pipe_fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

TEST(UnixRoles, TheSocketGroupReadsAndOnlyTheAdminGroupMutates) {
  ASSERT_EQ(geteuid(), 0u) << "this test needs root: it runs nvme-adaptctl as the user nobody";
  const group* admin = getgrnam(kAdminGroup);
  ASSERT_NE(admin, nullptr) << "the test needs the group '" << kAdminGroup << "' (part of base-passwd)";
  const gid_t admin_gid = admin->gr_gid;  // getgrnam's buffer is reused by the next look-up
  TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
  const std::string socket = dir / "agent.sock";
  FakeAgent agent;
  v1::ApiConfig config = UnixOnlyConfig(socket);
  config.set_unix_socket_admin_group(kAdminGroup);
  auto server = MustStart(config, agent);
  ASSERT_TRUE(server);

  const auto [read_rc, read_out] = CtlAsNobody({TestGroupId()}, {"--addr", socket, "status"});
  EXPECT_EQ(read_rc, 0) << read_out;
  const auto [denied_rc, denied_out] =
      CtlAsNobody({TestGroupId()}, {"--addr", socket, "policy", "set", "--mode", "adaptive"});
  EXPECT_EQ(denied_rc, 1) << denied_out;
  EXPECT_NE(denied_out.find("unix uid=65534 pid="), std::string::npos) << "the refusal names the peer: " << denied_out;
  EXPECT_NE(denied_out.find("is read-only"), std::string::npos) << denied_out;
  EXPECT_FALSE(agent.policy().policy().has_mode());

  const auto [admin_rc, admin_out] =
      CtlAsNobody({TestGroupId(), admin_gid}, {"--addr", socket, "policy", "set", "--mode", "adaptive"});
  EXPECT_EQ(admin_rc, 0) << admin_out;
  EXPECT_TRUE(agent.policy().policy().has_mode());
}

TEST(UnixRoles, AnAdminGroupThatDoesNotExistIsAClearError) {
  TempDir dir;
  FakeAgent agent;
  v1::ApiConfig config = UnixOnlyConfig(dir / "agent.sock");
  config.set_unix_socket_admin_group("no-such-group-nvme-adapt");
  auto server = api::StartApiServer(config, agent, nullptr);
  ASSERT_FALSE(server);
  EXPECT_NE(server.error().message.find("api.unix_socket_admin_group: group 'no-such-group-nvme-adapt'"),
            std::string::npos)
      << server.error().message;
}

}  // namespace
}  // namespace nvmeadapt::testing
