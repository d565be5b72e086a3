// SPDX-License-Identifier: Apache-2.0
#include "agent/api/server.h"

#include <grpc/grpc.h>
#include <grpcpp/ext/health_check_service_server_builder_option.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/impl/server_builder_option.h>
#include <grpcpp/impl/server_builder_plugin.h>
#include <grpcpp/security/auth_metadata_processor.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
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
#include <tuple>
#include <vector>

#include "agent/api/service.h"
#include "agent/api/unix_peers.h"
#include "agent/api/unix_socket.h"
#include "common/files.h"
#include "common/log.h"

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

// Checks the files at start, so that a missing or unreadable one is refused naming its field; afterwards
// gRPC watches them and a replaced certificate, key or CA takes effect without a restart.
Result<std::shared_ptr<grpc::ServerCredentials>> TlsCredentials(const ApiSettings& s) {
  for (const auto& [path, field] : {std::pair{&s.tls_cert_file, "api.tls.cert_file"},
                                    {&s.tls_key_file, "api.tls.key_file"},
                                    {&s.tls_client_ca_file, "api.tls.client_ca_file"}}) {
    if (path->empty()) continue;
    auto text = ReadWholeFile(*path, 1 << 20);
    if (!text) return MakeError(text.error().code, std::string(field) + ": " + text.error().message);
  }
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      s.tls_key_file, s.tls_cert_file, s.tls_client_ca_file, s.tls_reload_seconds);
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (!s.tls_client_ca_file.empty()) {
    options.watch_root_certs();
    // A client may come without a certificate (and use a token); one that shows a certificate must
    // show one from the CA, or the handshake fails.
    options.set_cert_request_type(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  return grpc::experimental::TlsServerCredentials(options);
}

// Authentication at the transport: runs for every call on the TLS listener, whatever its service (health
// included), before any handler, so that nothing a caller without credentials reaches holds a thread.
class TransportGate final : public grpc::AuthMetadataProcessor {
 public:
  explicit TransportGate(std::shared_ptr<const Authorizer> authorizer) : authorizer_(std::move(authorizer)) {}
  bool IsBlocking() const override { return false; }  // a hash and a compare: no thread of its own needed
  grpc::Status Process(const InputMetadata& metadata, grpc::AuthContext* context, OutputMetadata*,
                       OutputMetadata*) override {
    std::string authorization;
    const AuthDecision decision =
        authorizer_->Decide(Access::kRead, CredentialsOf(context, metadata, &authorization));
    if (!decision.allowed) {
      const auto path = metadata.find(":path");
      LogRefusal(path != metadata.end() ? std::string_view(path->second.data(), path->second.size()) : "a call",
                 "a TLS peer", decision.refusal);
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, decision.refusal);
    }
    return grpc::Status::OK;
  }

 private:
  std::shared_ptr<const Authorizer> authorizer_;
};

// Server reflection describes the API to whoever asks and holds a stream: the Unix socket only.
class WithoutReflection final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    std::erase_if(*plugins, [](const auto& plugin) { return plugin->name() == "proto_server_reflection"; });
  }
};

Result<TcpCredentialPolicy> LoadTcpPolicy(const ApiSettings& s) {
  TcpCredentialPolicy policy;
  policy.admin_certificate_names = s.admin_certificate_names;
  policy.read_open = s.tcp_read_open;
  for (const auto& [path, token, field] :
       {std::tuple{&s.token_file, &policy.admin_token, "api.token_file"},
        std::tuple{&s.read_token_file, &policy.read_token, "api.read_token_file"}}) {
    if (path->empty()) continue;
    auto loaded = BearerToken::Load(*path);
    if (!loaded) return MakeError(loaded.error().code, std::string(field) + ": " + loaded.error().message);
    *token = *loaded;
  }
  return policy;
}

class Listener {
 public:
  Listener(ServiceCore& core, Transport transport, std::shared_ptr<const Authorizer> authorizer,
           const UnixPeers* peers)
      : service_(core, transport, std::move(authorizer), peers) {}

  // `uri` empty: no port of its own (the Unix socket's connections are handed over one by one).
  Status Start(const std::string& uri, const std::shared_ptr<grpc::ServerCredentials>& credentials,
               const ApiSettings& s, bool reflection, bool health) {
    grpc::ServerBuilder builder;
    if (!uri.empty()) builder.AddListeningPort(uri, credentials, &port_);
    builder.RegisterService(&service_);
    if (!reflection) builder.SetOption(std::make_unique<WithoutReflection>());
    if (!health) builder.SetOption(std::make_unique<grpc::HealthCheckServiceServerBuilderOption>(nullptr));
    builder.SetMaxReceiveMessageSize(static_cast<int>(s.max_receive_message_bytes));
    // Without this a second agent could bind the same port and take half the connections.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    // Dead peers are noticed, so their streams end and free their slot.
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60'000);
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20'000);
    // Limits per connection: calls at once, a bounded TLS handshake, idle connections closed.
    builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, static_cast<int>(s.max_streams_per_connection));
    builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, 10'000);
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, 600'000);
    grpc::ResourceQuota quota("nvme-adapt-api");
    quota.SetMaxThreads(static_cast<int>(s.max_watch_streams) + kUnaryThreads);
    builder.SetResourceQuota(quota);
    server_ = builder.BuildAndStart();
    if (!server_ || (!uri.empty() && port_ == 0)) return MakeError(ErrorCode::kUnavailable, "cannot listen on " + uri);
    if (health) server_->GetHealthCheckService()->SetServingStatus(v1::AgentService::service_full_name(), true);
    return OkStatus();
  }

  void Stop(std::chrono::system_clock::time_point deadline) {
    if (!server_) return;
    if (auto* health = server_->GetHealthCheckService()) health->Shutdown();
    server_->Shutdown(deadline);
    server_->Wait();
    server_.reset();
  }

  grpc::Server* server() { return server_.get(); }
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

  Status Start(TcpCredentialPolicy policy, std::optional<gid_t> admin_gid) {
    const ApiSettings& s = core_.settings();
    if (s.unix_socket) {
      NA_ASSIGN_OR_RETURN(auto prepared, UnixSocketListener::Prepare(*s.unix_socket, s.unix_socket_group));
      socket_.emplace(std::move(prepared));
      peers_ = std::make_unique<UnixPeers>(admin_gid);
      unix_ = std::make_unique<Listener>(core_, Transport::kUnixSocket,
                                         std::make_shared<const Authorizer>(s.unix_socket_admin_group), peers_.get());
      if (Status st = unix_->Start("", nullptr, s, /*reflection=*/true, /*health=*/true); !st) {
        return MakeError(st.error().code, "api.unix_socket: cannot serve " + *s.unix_socket);
      }
      NA_ASSIGN_OR_RETURN(auto listening, socket_->Listen(128));
      NA_RETURN_IF_ERROR(peers_->Start(listening, unix_->server()));
      NA_RETURN_IF_ERROR(socket_->Publish());
      NA_INFO("api: listening on unix:" << *s.unix_socket << " (mode 0660, group " << s.unix_socket_group
                                        << ", admin: "
                                        << (s.unix_socket_admin_group.empty() ? "every peer"
                                                                              : "root and group " +
                                                                                    s.unix_socket_admin_group)
                                        << ")");
    }
    if (!s.tcp_address.empty()) {
      tcp_authorizer_ = std::make_shared<Authorizer>(Transport::kTcp, std::move(policy));
      std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
      if (!s.tcp_insecure_loopback) {
        NA_ASSIGN_OR_RETURN(auto tls, TlsCredentials(s));
        credentials = tls;
        credentials->SetAuthMetadataProcessor(std::make_shared<TransportGate>(tcp_authorizer_));
      }
      tcp_ = std::make_unique<Listener>(core_, Transport::kTcp, tcp_authorizer_, nullptr);
      // Without TLS no processor can gate the transport: only the AgentService, whose every call is
      // authorized, is served (no health, no reflection).
      if (Status st = tcp_->Start(s.tcp_address, credentials, s, /*reflection=*/false,
                                  /*health=*/!s.tcp_insecure_loopback);
          !st) {
        return DiagnoseTcpListen(s.tcp_address);
      }
      NA_INFO("api: listening on tcp " << s.tcp_address << " (port " << tcp_->port() << ", "
                                       << (s.tcp_insecure_loopback ? "INSECURE plaintext, loopback only" : "TLS")
                                       << ", read-only calls " << (s.tcp_read_open ? "open" : "authenticated")
                                       << ")");
      if (s.tls_client_ca_file.empty() && s.token_file.empty()) {
        NA_WARN("api: no api.tls.client_ca_file and no api.token_file: mutating calls over TCP are refused");
      } else if (!s.tls_client_ca_file.empty() && s.admin_certificate_names.empty()) {
        NA_WARN("api: no api.tls.admin_certificate_names: client certificates may only read");
      }
    }
    return OkStatus();
  }

  // A removed or emptied token file revokes its token at once; a file that cannot be read or is refused
  // keeps its previous token (and the error names it), without holding back the other file's change.
  Status Reload() override {
    if (!tcp_authorizer_) return OkStatus();
    const ApiSettings& s = core_.settings();
    TcpCredentialPolicy policy = *tcp_authorizer_->policy();
    std::string errors;
    for (const auto& [path, token, field] :
         {std::tuple{&s.token_file, &policy.admin_token, "api.token_file"},
          std::tuple{&s.read_token_file, &policy.read_token, "api.read_token_file"}}) {
      if (path->empty()) continue;
      auto reread = BearerToken::Reread(*path);
      if (!reread) {
        errors += std::string(errors.empty() ? "" : "; ") + field + ": " + reread.error().message +
                  " (its previous token stays)";
        continue;
      }
      if (!*reread && *token) NA_WARN("api: " << field << " " << *path << " is removed or empty: its token is revoked");
      *token = *reread;
    }
    tcp_authorizer_->Replace(std::move(policy));
    if (!errors.empty()) return MakeError(ErrorCode::kInvalidArgument, errors);
    NA_INFO("api: bearer tokens read again");
    return OkStatus();
  }

  void Shutdown() override {
    std::lock_guard lock(shutdown_mutex_);
    core_.BeginShutdown();
    const auto deadline = std::chrono::system_clock::now() + kShutdownGrace;
    if (peers_) peers_->Stop();
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
  std::unique_ptr<UnixPeers> peers_;
  std::shared_ptr<Authorizer> tcp_authorizer_;
  std::unique_ptr<Listener> unix_;
  std::unique_ptr<Listener> tcp_;
  std::mutex shutdown_mutex_;
};

}  // namespace

Result<std::unique_ptr<ApiServer>> StartApiServer(const v1::ApiConfig& config, AgentControl& agent,
                                                  RequestObserver* observer) {
  NA_ASSIGN_OR_RETURN(auto settings, ResolveApiConfig(config));
  NA_ASSIGN_OR_RETURN(auto policy, LoadTcpPolicy(settings));
  std::optional<gid_t> admin_gid;
  if (!settings.unix_socket_admin_group.empty()) {
    NA_ASSIGN_OR_RETURN(auto gid, LookUpGroup(settings.unix_socket_admin_group, "api.unix_socket_admin_group"));
    admin_gid = gid;
  }
  static std::once_flag plugins;
  std::call_once(plugins, [] {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
    // A reference to the gRPC library for the life of the process: without it, destroying the last
    // server shuts the library down, which waits up to 10 s for an idle internal thread.
    grpc_init();
  });
  auto server = std::make_unique<ApiServerImpl>(agent, observer, settings);
  NA_RETURN_IF_ERROR(server->Start(std::move(policy), admin_gid));
  return std::unique_ptr<ApiServer>(std::move(server));
}

}  // namespace nvmeadapt::api
