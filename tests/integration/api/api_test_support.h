// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the API integration tests: a temporary directory, a server in front of a FakeAgent,
// clients made the way nvme-adaptctl makes them, and the test certificates.
#pragma once

#include <gtest/gtest.h>
#include <grp.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "agent/api/server.h"
#include "agent/ctl/client.h"
#include "nvmeadapt/v1/agent.grpc.pb.h"
#include "tests/integration/api/fake_agent.h"

namespace nvmeadapt::testing {

// Group given the test sockets: present on every Debian system (base-passwd), and not root's.
inline constexpr const char* kTestGroup = "daemon";

class TempDir {
 public:
  TempDir() {
    std::string pattern = "/tmp/nvme-adapt-api-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp " << pattern << ": " << strerror(errno);
    path_ = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline gid_t TestGroupId() {
  const group* g = getgrnam(kTestGroup);
  if (!g) ADD_FAILURE() << "the tests need the group '" << kTestGroup << "' (part of base-passwd)";
  return g ? g->gr_gid : 0;
}

inline v1::ApiConfig UnixOnlyConfig(const std::string& socket) {
  v1::ApiConfig config;
  config.set_unix_socket(socket);
  config.set_unix_socket_group(kTestGroup);
  return config;
}

// Plain TCP on a free loopback port (insecure_loopback_tcp), no Unix socket.
inline v1::ApiConfig InsecureLoopbackConfig() {
  v1::ApiConfig config;
  config.set_unix_socket_disabled(true);
  config.set_tcp_address("127.0.0.1:0");
  config.set_insecure_loopback_tcp(true);
  return config;
}

// TLS on a free loopback port, no Unix socket: the server certificate, its key and the client CA that
// make-test-certs.sh wrote in `certs`.
inline v1::ApiConfig LoopbackTlsConfig(const TempDir& certs) {
  v1::ApiConfig config;
  config.set_unix_socket_disabled(true);
  config.set_tcp_address("127.0.0.1:0");
  config.mutable_tls()->set_cert_file(certs / "server.pem");
  config.mutable_tls()->set_key_file(certs / "server.key");
  config.mutable_tls()->set_client_ca_file(certs / "ca.pem");
  return config;
}

inline std::unique_ptr<api::ApiServer> MustStart(const v1::ApiConfig& config, api::AgentControl& agent,
                                                 api::RequestObserver* observer = nullptr) {
  auto server = api::StartApiServer(config, agent, observer);
  if (!server) {
    ADD_FAILURE() << "StartApiServer: " << server.error().message;
    return nullptr;
  }
  return std::move(server).value();
}

// A client made as nvme-adaptctl makes it: calls go through Context(), which carries the token.
struct Connection {
  explicit Connection(ctl::AgentClient c) : client(std::move(c)), stub(v1::AgentService::NewStub(client.channel())) {}
  std::unique_ptr<grpc::ClientContext> Context() const { return client.NewContext(); }
  v1::AgentService::Stub* operator->() const { return stub.get(); }

  ctl::AgentClient client;
  std::unique_ptr<v1::AgentService::Stub> stub;
};

inline std::unique_ptr<Connection> MustConnect(const ctl::ClientOptions& options) {
  auto client = ctl::AgentClient::Create(options);
  if (!client) {
    ADD_FAILURE() << "AgentClient::Create: " << client.error().message;
    return nullptr;
  }
  return std::make_unique<Connection>(std::move(client).value());
}

// A TLS client of the server on `port` trusting the test CA of `certs`, with the certificate `cert` of
// `certs` ("client", "rogue", or none) and the token file `token_file` of `certs` (or none).
inline std::unique_ptr<Connection> TlsClient(const TempDir& certs, int port, const std::string& cert,
                                             const std::string& token_file) {
  ctl::ClientOptions options;
  options.address = "127.0.0.1:" + std::to_string(port);
  options.ca_file = certs / "ca.pem";
  if (!cert.empty()) {
    options.cert_file = certs / (cert + ".pem");
    options.key_file = certs / (cert + ".key");
  }
  if (!token_file.empty()) options.token_file = certs / token_file;
  return MustConnect(options);
}

inline ctl::ClientOptions UnixClient(const std::string& socket) {
  ctl::ClientOptions options;
  options.address = socket;
  options.timeout = std::chrono::seconds(10);
  return options;
}

inline std::unique_ptr<grpc::ClientContext> Deadline(int seconds = 10) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  return context;
}

inline void WriteFile(const std::string& path, const std::string& text, mode_t mode) {
  std::ofstream(path) << text;
  chmod(path.c_str(), mode);
}

// Runs make-test-certs.sh into `dir`; a missing openssl fails the test with the reason.
inline bool MakeCertificates(const std::string& dir) {
  const std::string command = std::string(API_TEST_SCRIPTS_DIR) + "/make-test-certs.sh " + dir;
  const int rc = std::system(command.c_str());
  if (rc != 0) ADD_FAILURE() << command << " failed (status " << rc << ")";
  return rc == 0;
}

inline v1::SetPolicyRequest AdaptiveGlobal() {
  v1::SetPolicyRequest request;
  request.mutable_policy()->set_mode(v1::CONTROLLER_MODE_ADAPTIVE);
  return request;
}

}  // namespace nvmeadapt::testing
