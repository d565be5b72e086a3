#include "agent/api/server.h"

#include <grpc/grpc.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <vector>

#include "agent/api/service.h"
#include "agent/api/unix_socket.h"
#include "agent/common/files.h"
#include "agent/common/log.h"

namespace nvmeadapt::api {
namespace {

constexpr auto kShutdownGrace = std::chrono::seconds(1);
// Threads beyond the streams: pollers and unary calls in flight. Past the quota gRPC refuses calls
// instead of spawning threads without bound.
constexpr int kUnaryThreads = 64;

// Why gRPC could not listen: it only logs the reason, so bind a socket the same way to get the errno.
Error DiagnoseTcpListen(const std::string& address) {
  const std::string prefix = "api.tcp_address: cannot listen on " + address;
  auto host_port = SplitHostPort(address);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(host_port ? host_port->port : 0);
  if (!host_port || getaddrinfo(host_port->host.c_str(), port.c_str(), &hints, &found) != 0 || !found) {
    return MakeError(ErrorCode::kInvalidArgument, prefix + ": cannot resolve the host");
  }
  int err = 0;
  const int fd = socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, found->ai_protocol);
  if (fd < 0 || bind(fd, found->ai_addr, found->ai_addrlen) != 0) err = errno;
  if (fd >= 0) close(fd);
  freeaddrinfo(found);
  if (err != 0) {
    Error error = SysError("bind", address, err);
    error.message = prefix + ": " + std::strerror(err);
    return error;
  }
  return MakeError(ErrorCode::kUnavailable, prefix + " (gRPC logged the reason)");
}

Result<std::shared_ptr<grpc::ServerCredentials>> TlsCredentials(const ApiSettings& s) {
  auto cert = ReadWholeFile(s.tls_cert_file, 1 << 20);
  if (!cert) return MakeError(cert.error().code, "api.tls.cert_file: " + cert.error().message);
  auto key = ReadWholeFile(s.tls_key_file, 1 << 20);
  if (!key) return MakeError(key.error().code, "api.tls.key_file: " + key.error().message);
  grpc::SslServerCredentialsOptions options(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  if (!s.tls_client_ca_file.empty()) {
    auto ca = ReadWholeFile(s.tls_client_ca_file, 1 << 20);
    if (!ca) return MakeError(ca.error().code, "api.tls.client_ca_file: " + ca.error().message);
    options.pem_root_certs = *ca;
    // A client may come without a certificate (and use a token); one that shows a certificate must
    // show one from the CA, or the handshake fails.
    options.client_certificate_request = GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  options.pem_key_cert_pairs.push_back({*key, *cert});
  return grpc::SslServerCredentials(options);
}

class Listener {
 public:
  Listener(ServiceCore& core, Transport transport, Authorizer authorizer)
      : service_(core, transport, std::move(authorizer)) {}

  Status Start(const std::string& uri, const std::shared_ptr<grpc::ServerCredentials>& credentials,
               const ApiSettings& s) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort(uri, credentials, &port_);
    builder.RegisterService(&service_);
    builder.SetMaxReceiveMessageSize(static_cast<int>(s.max_receive_message_bytes));
    // Without this a second agent could bind the same port and take half the connections.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    // Dead peers are noticed, so their streams end and free their slot.
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60'000);
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20'000);
    grpc::ResourceQuota quota("nvme-adapt-api");
    quota.SetMaxThreads(static_cast<int>(s.max_watch_streams) + kUnaryThreads);
    builder.SetResourceQuota(quota);
    server_ = builder.BuildAndStart();
    if (!server_ || port_ == 0) return MakeError(ErrorCode::kUnavailable, "cannot listen on " + uri);
    server_->GetHealthCheckService()->SetServingStatus(v1::AgentService::service_full_name(), true);
    return OkStatus();
  }

  void Stop(std::chrono::system_clock::time_point deadline) {
    if (!server_) return;
    server_->GetHealthCheckService()->Shutdown();
    server_->Shutdown(deadline);
    server_->Wait();
    server_.reset();
  }

  int port() const { return port_; }

 private:
  AgentServiceImpl service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

class ApiServerImpl final : public ApiServer {
 public:
  ApiServerImpl(AgentControl& agent, RequestObserver* observer, const ApiSettings& settings)
      : core_(agent, observer, settings) {}
  ~ApiServerImpl() override { Shutdown(); }

  Status Start(std::optional<BearerToken> token) {
    const ApiSettings& s = core_.settings();
    if (s.unix_socket) {
      auto prepared = UnixSocketListener::Prepare(*s.unix_socket, s.unix_socket_group);
      if (!prepared) return prepared.error();
      socket_.emplace(std::move(prepared).value());
      unix_ = std::make_unique<Listener>(core_, Transport::kUnixSocket, Authorizer(Transport::kUnixSocket, {}, false));
      if (Status st = unix_->Start(socket_->bind_uri(), grpc::InsecureServerCredentials(), s); !st) {
        return MakeError(st.error().code, "api.unix_socket: cannot listen on " + *s.unix_socket);
      }
      if (Status st = socket_->Publish(); !st) return st.error();
      NA_INFO("api: listening on unix:" << *s.unix_socket << " (mode 0660, group " << s.unix_socket_group << ")");
    }
    if (!s.tcp_address.empty()) {
      std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
      if (!s.tcp_insecure_loopback) {
        auto tls = TlsCredentials(s);
        if (!tls) return tls.error();
        credentials = *tls;
      }
      tcp_ = std::make_unique<Listener>(core_, Transport::kTcp,
                                        Authorizer(Transport::kTcp, std::move(token), s.tcp_read_open));
      if (Status st = tcp_->Start(s.tcp_address, credentials, s); !st) return DiagnoseTcpListen(s.tcp_address);
      NA_INFO("api: listening on tcp " << s.tcp_address << " (port " << tcp_->port() << ", "
                                       << (s.tcp_insecure_loopback ? "INSECURE plaintext, loopback only" : "TLS")
                                       << ", read-only calls " << (s.tcp_read_open ? "open" : "authenticated")
                                       << ")");
      if (s.tls_client_ca_file.empty() && s.token_file.empty()) {
        NA_WARN("api: no api.tls.client_ca_file and no api.token_file: mutating calls over TCP are refused");
      }
    }
    return OkStatus();
  }

  void Shutdown() override {
    std::lock_guard lock(shutdown_mutex_);
    core_.BeginShutdown();
    const auto deadline = std::chrono::system_clock::now() + kShutdownGrace;
    if (tcp_) tcp_->Stop(deadline);
    if (unix_) unix_->Stop(deadline);
    if (socket_) socket_->Remove();
  }

  std::optional<std::string> unix_socket() const override {
    if (socket_) return socket_->path();
    return std::nullopt;
  }
  int tcp_port() const override { return tcp_ ? tcp_->port() : 0; }
  size_t open_streams() const override { return core_.open_streams(); }

 private:
  ServiceCore core_;
  std::optional<UnixSocketListener> socket_;
  std::unique_ptr<Listener> unix_;
  std::unique_ptr<Listener> tcp_;
  std::mutex shutdown_mutex_;
};

}  // namespace

Result<std::unique_ptr<ApiServer>> StartApiServer(const v1::ApiConfig& config, AgentControl& agent,
                                                  RequestObserver* observer) {
  auto settings = ResolveApiConfig(config);
  if (!settings) return settings.error();
  std::optional<BearerToken> token;
  if (!settings->token_file.empty()) {
    auto loaded = BearerToken::Load(settings->token_file);
    if (!loaded) return MakeError(loaded.error().code, "api.token_file: " + loaded.error().message);
    token = *loaded;
  }
  static std::once_flag plugins;
  std::call_once(plugins, [] {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
    // A reference to the gRPC library for the life of the process: without it, destroying the last
    // server shuts the library down, which waits up to 10 s for an idle internal thread.
    grpc_init();
  });
  auto server = std::make_unique<ApiServerImpl>(agent, observer, *settings);
  if (Status started = server->Start(std::move(token)); !started) return started.error();
  return std::unique_ptr<ApiServer>(std::move(server));
}

}  // namespace nvmeadapt::api
