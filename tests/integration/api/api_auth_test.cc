// SPDX-License-Identifier: Apache-2.0
// The auth matrix over real sockets: the Unix socket's mode, owner and group (and who can connect), the
// TCP refusals at start, and TLS with client certificates and bearer tokens.
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/api/api_test_support.h"

namespace nvmeadapt::testing {
namespace {

// Connects to `socket` in a child process running as nobody, with `group` as its only extra group
// (none when 0). Returns the child's errno, 0 when the connection was accepted.
int ConnectAsNobody(const std::string& socket, gid_t group) {
  const pid_t child = fork();
  if (child == 0) {
    const gid_t groups[1] = {group};
    if (setgroups(group ? 1 : 0, groups) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(100);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    strncpy(address.sun_path, socket.c_str(), sizeof(address.sun_path) - 1);
    _exit(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 ? 0 : errno);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 101;
}

TEST(UnixSocket, Mode0660OwnedByTheAgentWithTheConfiguredGroupAndNothingLeftAround) {
  TempDir dir;
  const std::string socket = dir / "run/agent.sock";
  FakeAgent agent;
  auto server = MustStart(UnixOnlyConfig(socket), agent);
  ASSERT_TRUE(server);
  struct stat st {};
  ASSERT_EQ(lstat(socket.c_str(), &st), 0) << strerror(errno);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0660u);
  EXPECT_EQ(st.st_uid, geteuid());
  EXPECT_EQ(st.st_gid, TestGroupId());
  // The private directory the socket was bound in is gone.
  std::vector<std::string> entries;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "run")) entries.push_back(entry.path().filename());
  EXPECT_EQ(entries, std::vector<std::string>{"agent.sock"});
  auto connection = MustConnect(UnixClient(socket));
  v1::GetStatusResponse status;
  EXPECT_TRUE((*connection)->GetStatus(connection->Context().get(), {}, &status).ok());
  server->Shutdown();
  EXPECT_NE(lstat(socket.c_str(), &st), 0) << "the socket outlived the server";
}

TEST(UnixSocket, OtherUsersAreRefusedByTheKernelAndGroupMembersGetIn) {
  ASSERT_EQ(geteuid(), 0u) << "this test needs root: it switches to the user nobody to try the socket";
  TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
  const std::string socket = dir / "agent.sock";
  FakeAgent agent;
  auto server = MustStart(UnixOnlyConfig(socket), agent);
  ASSERT_TRUE(server);
  EXPECT_EQ(ConnectAsNobody(socket, 0), EACCES);
  EXPECT_EQ(ConnectAsNobody(socket, TestGroupId()), 0);
}

TEST(UnixSocket, AGroupThatDoesNotExistIsAClearError) {
  TempDir dir;
  FakeAgent agent;
  auto config = UnixOnlyConfig(dir / "agent.sock");
  config.set_unix_socket_group("nvme-adapt-no-such-group");
  auto server = api::StartApiServer(config, agent, nullptr);
  ASSERT_FALSE(server);
  EXPECT_EQ(server.error().message,
            "api.unix_socket_group: group 'nvme-adapt-no-such-group' does not exist (create it, e.g. groupadd "
            "--system nvme-adapt-no-such-group, or name another group)");
}

TEST(UnixSocket, ALiveSocketIsNotStolenAStaleOneIsReplacedAFileIsNotTouched) {
  TempDir dir;
  const std::string socket = dir / "agent.sock";
  FakeAgent agent;
  auto first = MustStart(UnixOnlyConfig(socket), agent);
  ASSERT_TRUE(first);
  auto second = api::StartApiServer(UnixOnlyConfig(socket), agent, nullptr);
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message.find("is in use: another process listens on it"), std::string::npos)
      << second.error().message;

  // A socket nobody listens on any more (a crashed agent's) is replaced.
  first.reset();
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  strncpy(address.sun_path, socket.c_str(), sizeof(address.sun_path) - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  close(fd);
  auto third = MustStart(UnixOnlyConfig(socket), agent);
  ASSERT_TRUE(third);
  third.reset();

  WriteFile(socket, "not a socket", 0644);
  auto fourth = api::StartApiServer(UnixOnlyConfig(socket), agent, nullptr);
  ASSERT_FALSE(fourth);
  EXPECT_NE(fourth.error().message.find("exists and is not a socket"), std::string::npos);
}

TEST(Tcp, PlainTcpIsRefusedWithoutTheLoopbackFlag) {
  FakeAgent agent;
  v1::ApiConfig config;
  config.set_unix_socket_disabled(true);
  config.set_tcp_address("127.0.0.1:0");
  auto server = api::StartApiServer(config, agent, nullptr);
  ASSERT_FALSE(server);
  EXPECT_NE(server.error().message.find("api.tcp_address: TCP needs TLS"), std::string::npos) << server.error().message;
}

TEST(Tcp, TheInsecureFlagIsRefusedOnAnyNonLoopbackAddress) {
  FakeAgent agent;
  for (const char* address : {"0.0.0.0:0", "192.0.2.10:7000", "[::]:0", "example.com:7000"}) {
    v1::ApiConfig config;
    config.set_unix_socket_disabled(true);
    config.set_tcp_address(address);
    config.set_insecure_loopback_tcp(true);
    auto server = api::StartApiServer(config, agent, nullptr);
    ASSERT_FALSE(server) << address;
    EXPECT_NE(server.error().message.find("insecure_loopback_tcp allows only a loopback address"), std::string::npos)
        << server.error().message;
  }
}

TEST(Tcp, InsecureLoopbackServesReadsOpenlyIfAskedButMutationsNeedTheToken) {
  TempDir dir;
  WriteFile(dir / "token", "loopback-token-0123456789\n", 0600);
  WriteFile(dir / "client-token", "loopback-token-0123456789\n", 0600);
  FakeAgent agent;
  v1::ApiConfig config = InsecureLoopbackConfig();
  config.set_token_file(dir / "token");
  config.set_tcp_read_access(v1::READ_ACCESS_OPEN);
  auto server = MustStart(config, agent);
  ASSERT_TRUE(server);
  ctl::ClientOptions options;
  options.address = "127.0.0.1:" + std::to_string(server->tcp_port());
  options.insecure_loopback_tcp = true;
  auto anonymous = MustConnect(options);
  v1::GetStatusResponse status;
  EXPECT_TRUE((*anonymous)->GetStatus(anonymous->Context().get(), {}, &status).ok());
  v1::SetPolicyResponse reply;
  EXPECT_EQ((*anonymous)->SetPolicy(anonymous->Context().get(), AdaptiveGlobal(), &reply).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  options.token_file = dir / "client-token";
  auto with_token = MustConnect(options);
  EXPECT_TRUE((*with_token)->SetPolicy(with_token->Context().get(), AdaptiveGlobal(), &reply).ok());
}

TEST(Tcp, APortInUseIsRefusedWithTheReasonNotShared) {
  FakeAgent agent;
  v1::ApiConfig config = InsecureLoopbackConfig();
  auto first = MustStart(config, agent);
  ASSERT_TRUE(first);
  const std::string address = "127.0.0.1:" + std::to_string(first->tcp_port());
  config.set_tcp_address(address);
  auto second = api::StartApiServer(config, agent, nullptr);
  ASSERT_FALSE(second) << "a second agent shares the port (SO_REUSEPORT)";
  EXPECT_EQ(second.error().message, "api.tcp_address: cannot listen on " + address + ": Address already in use");
}

TEST(Tcp, ATokenFileOtherUsersCanReadIsRefusedAtStart) {
  TempDir dir;
  WriteFile(dir / "token", "world-readable-token-0123\n", 0644);
  FakeAgent agent;
  v1::ApiConfig config = InsecureLoopbackConfig();
  config.set_token_file(dir / "token");
  auto server = api::StartApiServer(config, agent, nullptr);
  ASSERT_FALSE(server);
  EXPECT_NE(server.error().message.find("other users can access the token file (mode 0644)"), std::string::npos)
      << server.error().message;
}

class TlsAuth : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    certs_ = new TempDir;
    MakeCertificates(certs_->path());
    WriteFile(*certs_ / "token", "right-token-0123456789abcdef\n", 0600);
    WriteFile(*certs_ / "wrong-token", "wrong-token-0123456789abcdef\n", 0600);
  }
  static void TearDownTestSuite() { delete certs_; }

  void Start(v1::ReadAccess read_access) {
    v1::ApiConfig config = LoopbackTlsConfig(*certs_);
    config.set_token_file(*certs_ / "token");
    config.mutable_tls()->add_admin_certificate_names("operator");  // the CN of client.pem
    config.set_tcp_read_access(read_access);
    server_ = MustStart(config, agent_);
    ASSERT_TRUE(server_);
  }

  // A client trusting the test CA, with the given certificate ("client", "rogue", or none) and token file.
  std::unique_ptr<Connection> Client(const std::string& cert, const std::string& token_file) {
    return TlsClient(*certs_, server_->tcp_port(), cert, token_file);
  }

  grpc::StatusCode SetPolicy(const Connection& c) {
    v1::SetPolicyResponse reply;
    return c->SetPolicy(c.Context().get(), AdaptiveGlobal(), &reply).error_code();
  }
  grpc::StatusCode SetQueueMode(const Connection& c) {
    v1::SetQueueModeRequest request;
    request.mutable_queue()->set_controller("nvme0");
    request.mutable_queue()->set_queue(1);
    request.set_mode(v1::REAP_MODE_POLL);
    v1::SetQueueModeResponse reply;
    return c->SetQueueMode(c.Context().get(), request, &reply).error_code();
  }
  grpc::StatusCode SetPause(const Connection& c) {
    v1::SetPauseResponse reply;
    return c->SetPause(c.Context().get(), v1::SetPauseRequest(), &reply).error_code();
  }
  grpc::StatusCode GetStatus(const Connection& c) {
    v1::GetStatusResponse reply;
    return c->GetStatus(c.Context().get(), {}, &reply).error_code();
  }
  bool PolicyChanged() const { return agent_.policy().policy().has_mode(); }

  static TempDir* certs_;
  FakeAgent agent_;
  std::unique_ptr<api::ApiServer> server_;
};

TempDir* TlsAuth::certs_ = nullptr;

TEST_F(TlsAuth, AMutatingCallWithNeitherCertificateNorTokenIsRefused) {
  Start(v1::READ_ACCESS_AUTHENTICATED);
  auto stub = Client("", "");
  EXPECT_EQ(SetPolicy(*stub), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(SetQueueMode(*stub), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(SetPause(*stub), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_FALSE(PolicyChanged());
  EXPECT_FALSE(agent_.queue("nvme0", 1)->has_override());
  EXPECT_FALSE(agent_.GetStatus().has_pause());
}

TEST_F(TlsAuth, AWrongTokenIsRefusedEvenForReads) {
  Start(v1::READ_ACCESS_OPEN);
  auto stub = Client("", "wrong-token");
  EXPECT_EQ(SetPolicy(*stub), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(GetStatus(*stub), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_FALSE(PolicyChanged());
}

TEST_F(TlsAuth, TheRightTokenIsAccepted) {
  Start(v1::READ_ACCESS_AUTHENTICATED);
  auto stub = Client("", "token");
  EXPECT_EQ(SetPolicy(*stub), grpc::StatusCode::OK);
  EXPECT_EQ(SetQueueMode(*stub), grpc::StatusCode::OK);
  EXPECT_EQ(SetPause(*stub), grpc::StatusCode::OK);
  EXPECT_TRUE(agent_.GetStatus().has_pause());
  EXPECT_EQ(GetStatus(*stub), grpc::StatusCode::OK);
  EXPECT_TRUE(PolicyChanged());
}

TEST_F(TlsAuth, AClientCertificateFromTheCaIsAccepted) {
  Start(v1::READ_ACCESS_AUTHENTICATED);
  auto stub = Client("client", "");
  EXPECT_EQ(SetPolicy(*stub), grpc::StatusCode::OK);
  EXPECT_EQ(SetQueueMode(*stub), grpc::StatusCode::OK);
  EXPECT_TRUE(PolicyChanged());
}

TEST_F(TlsAuth, AClientCertificateFromAnotherCaIsRefusedAtTheHandshake) {
  Start(v1::READ_ACCESS_OPEN);
  auto stub = Client("rogue", "");
  // The TLS handshake fails, so the call never reaches the service: gRPC reports the transport failure.
  EXPECT_EQ(SetPolicy(*stub), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(GetStatus(*stub), grpc::StatusCode::UNAVAILABLE);
  EXPECT_FALSE(PolicyChanged());
}

TEST_F(TlsAuth, ReadsNeedCredentialsByDefault) {
  Start(v1::READ_ACCESS_AUTHENTICATED);
  auto anonymous = Client("", "");
  EXPECT_EQ(GetStatus(*anonymous), grpc::StatusCode::UNAUTHENTICATED);
  v1::ListQueuesResponse queues;
  EXPECT_EQ((*anonymous)->ListQueues(anonymous->Context().get(), {}, &queues).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  auto context = anonymous->Context();
  auto stream = (*anonymous)->WatchEvents(context.get(), {});
  v1::Event event;
  EXPECT_FALSE(stream->Read(&event));
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(GetStatus(*Client("client", "")), grpc::StatusCode::OK);
}

TEST_F(TlsAuth, OpenReadAccessLetsAnyTlsClientReadButNotWrite) {
  Start(v1::READ_ACCESS_OPEN);
  auto anonymous = Client("", "");
  EXPECT_EQ(GetStatus(*anonymous), grpc::StatusCode::OK);
  v1::GetPolicyResponse policy;
  EXPECT_TRUE((*anonymous)->GetPolicy(anonymous->Context().get(), {}, &policy).ok());
  EXPECT_EQ(SetPolicy(*anonymous), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_FALSE(PolicyChanged());
}

TEST_F(TlsAuth, AClientThatDoesNotTrustTheAgentsCertificateCannotTalkToIt) {
  Start(v1::READ_ACCESS_OPEN);
  ctl::ClientOptions options;
  options.address = "127.0.0.1:" + std::to_string(server_->tcp_port());
  options.ca_file = *certs_ / "other-ca.pem";
  auto stub = MustConnect(options);
  EXPECT_EQ(GetStatus(*stub), grpc::StatusCode::UNAVAILABLE);
}

}  // namespace
}  // namespace nvmeadapt::testing
