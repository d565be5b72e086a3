// SPDX-License-Identifier: Apache-2.0
#include "agent/ctl/client.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <cctype>

#include "agent/api/api_config.h"
#include "agent/api/validate.h"
#include "common/files.h"

namespace nvmeadapt::ctl {
namespace {

constexpr size_t kMaxPemBytes = 1 << 20;
constexpr int kMaxResponseBytes = 64 << 20;

Result<std::string> ReadPem(const std::string& path, std::string_view option) {
  auto text = ReadWholeFile(path, kMaxPemBytes);
  if (!text) return MakeError(text.error().code, std::string(option) + ": " + text.error().message);
  return text;
}

}  // namespace

Result<AgentClient> AgentClient::Create(const ClientOptions& options) {
  AgentClient client;
  client.timeout_ = options.timeout;
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(kMaxResponseBytes);
  for (const auto& [name, value] : options.channel_arguments) arguments.SetInt(name, value);
  const std::string& address = options.address;
  const bool tls_options = !options.ca_file.empty() || !options.cert_file.empty() || !options.key_file.empty() ||
                           !options.server_name.empty();
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  std::string target;
  if (address.starts_with('/') || address.starts_with("unix:")) {
    if (tls_options || options.insecure_loopback_tcp) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "--ca, --cert, --key, --server-name and --insecure-loopback-tcp are for host:port addresses");
    }
    target = address.starts_with('/') ? "unix:" + address : address;
    credentials = grpc::InsecureChannelCredentials();
  } else {
    auto host_port = api::SplitHostPort(address);
    if (!host_port) return MakeError(ErrorCode::kInvalidArgument, "--addr: " + host_port.error().message);
    target = address;
    if (options.insecure_loopback_tcp) {
      // Never send a token in clear text over a network.
      if (!api::IsLoopbackHost(host_port->host)) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "--insecure-loopback-tcp: only for loopback addresses (127.0.0.0/8, ::1, localhost), got " +
                             api::Quoted(address));
      }
      if (tls_options) return MakeError(ErrorCode::kInvalidArgument, "--insecure-loopback-tcp: cannot be combined with TLS options");
      credentials = grpc::InsecureChannelCredentials();
    } else {
      grpc::SslCredentialsOptions tls;
      if (!options.ca_file.empty()) {
        NA_ASSIGN_OR_RETURN(auto ca, ReadPem(options.ca_file, "--ca"));
        tls.pem_root_certs = ca;
      }
      if (options.cert_file.empty() != options.key_file.empty()) {
        return MakeError(ErrorCode::kInvalidArgument, "--cert and --key go together");
      }
      if (!options.cert_file.empty()) {
        NA_ASSIGN_OR_RETURN(auto cert, ReadPem(options.cert_file, "--cert"));
        NA_ASSIGN_OR_RETURN(auto key, ReadPem(options.key_file, "--key"));
        tls.pem_cert_chain = cert;
        tls.pem_private_key = key;
      }
      if (!options.server_name.empty()) arguments.SetSslTargetNameOverride(options.server_name);
      credentials = grpc::SslCredentials(tls);
    }
  }
  if (!options.token_file.empty()) {
    auto token = ReadWholeFile(options.token_file, 4096);
    if (!token) return MakeError(token.error().code, "--token-file: " + token.error().message);
    while (!token->empty() && std::isspace(static_cast<unsigned char>(token->back()))) token->pop_back();
    if (token->empty()) return MakeError(ErrorCode::kInvalidArgument, "--token-file: " + options.token_file + " is empty");
    client.token_ = *token;
  }
  client.channel_ = grpc::CreateCustomChannel(target, credentials, arguments);
  return client;
}

std::unique_ptr<grpc::ClientContext> AgentClient::NewContext(bool streaming) const {
  auto context = std::make_unique<grpc::ClientContext>();
  if (token_) context->AddMetadata("authorization", "Bearer " + *token_);
  if (!streaming) context->set_deadline(std::chrono::system_clock::now() + timeout_);
  return context;
}

}  // namespace nvmeadapt::ctl
