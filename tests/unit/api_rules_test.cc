// SPDX-License-Identifier: Apache-2.0
// The API rules that need no server: ApiConfig resolution (listeners, TLS, loopback), request-shape
// validation, quoting of outside input, and the one mapping from error codes to gRPC status codes.
#include <gtest/gtest.h>

#include "agent/api/api_config.h"
#include "agent/api/status_map.h"
#include "agent/api/validate.h"

namespace nvmeadapt::api {
namespace {

TEST(ApiConfig, DefaultsAreTheUnixSocketOnly) {
  auto s = ResolveApiConfig({});
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->unix_socket, "/run/nvme-adapt/agent.sock");
  EXPECT_EQ(s->unix_socket_group, "nvme-adapt");
  EXPECT_TRUE(s->tcp_address.empty());
  EXPECT_FALSE(s->tcp_read_open);
  EXPECT_EQ(s->max_receive_message_bytes, 65536u);
  EXPECT_EQ(s->max_watch_streams, 128u);
  EXPECT_EQ(s->watch_queue_events, 1024u);
}

TEST(ApiConfig, TlsTcpWithTokenAndOpenReads) {
  v1::ApiConfig c;
  c.set_unix_socket_disabled(true);
  c.set_tcp_address("[::1]:7443");
  c.mutable_tls()->set_cert_file("/s.pem");
  c.mutable_tls()->set_key_file("/s.key");
  c.mutable_tls()->set_client_ca_file("/ca.pem");
  c.set_token_file("/token");
  c.set_tcp_read_access(v1::READ_ACCESS_OPEN);
  auto s = ResolveApiConfig(c);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_FALSE(s->unix_socket);
  EXPECT_FALSE(s->tcp_insecure_loopback);
  EXPECT_EQ(s->tls_client_ca_file, "/ca.pem");
  EXPECT_TRUE(s->tcp_read_open);
}

struct Refusal {
  const char* name;
  void (*fill)(v1::ApiConfig&);
  const char* message;
};

class ApiConfigRefusal : public ::testing::TestWithParam<Refusal> {};

TEST_P(ApiConfigRefusal, NamesTheField) {
  v1::ApiConfig c;
  GetParam().fill(c);
  auto s = ResolveApiConfig(c);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.error().message, GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ApiConfigRefusal,
    ::testing::Values(
        Refusal{"no listener", [](v1::ApiConfig& c) { c.set_unix_socket_disabled(true); },
                "api.unix_socket_disabled: no listener left (api.tcp_address is empty)"},
        Refusal{"relative socket", [](v1::ApiConfig& c) { c.set_unix_socket("agent.sock"); },
                "api.unix_socket: must be an absolute path, got 'agent.sock'"},
        Refusal{"socket too long", [](v1::ApiConfig& c) { c.set_unix_socket("/" + std::string(100, 'x')); },
                "api.unix_socket: longer than 88 characters"},
        Refusal{"plain tcp", [](v1::ApiConfig& c) { c.set_tcp_address("127.0.0.1:7000"); },
                "api.tcp_address: TCP needs TLS (api.tls.cert_file and api.tls.key_file) or, on a loopback "
                "address only, api.insecure_loopback_tcp"},
        Refusal{"insecure on all addresses",
                [](v1::ApiConfig& c) {
                  c.set_tcp_address("0.0.0.0:7000");
                  c.set_insecure_loopback_tcp(true);
                },
                "api.tcp_address: insecure_loopback_tcp allows only a loopback address (127.0.0.0/8, ::1, "
                "localhost), got '0.0.0.0:7000'"},
        Refusal{"insecure with tls",
                [](v1::ApiConfig& c) {
                  c.set_tcp_address("127.0.0.1:7000");
                  c.set_insecure_loopback_tcp(true);
                  c.mutable_tls()->set_cert_file("/s.pem");
                },
                "api.insecure_loopback_tcp: cannot be combined with api.tls"},
        Refusal{"insecure without tcp", [](v1::ApiConfig& c) { c.set_insecure_loopback_tcp(true); },
                "api.insecure_loopback_tcp: set without api.tcp_address"},
        Refusal{"tls without tcp", [](v1::ApiConfig& c) { c.mutable_tls()->set_key_file("/k"); },
                "api.tls: set without api.tcp_address"},
        Refusal{"token without tcp", [](v1::ApiConfig& c) { c.set_token_file("/t"); },
                "api.token_file: set without api.tcp_address"},
        Refusal{"no port", [](v1::ApiConfig& c) { c.set_tcp_address("localhost"); },
                "api.tcp_address: expected host:port, got 'localhost'"},
        Refusal{"bad port", [](v1::ApiConfig& c) { c.set_tcp_address("[::1]:65536"); },
                "api.tcp_address: expected host:port with a port in [0, 65535], got '[::1]:65536'"},
        Refusal{"control character", [](v1::ApiConfig& c) { c.set_unix_socket_group("adm\nroot"); },
                "api.unix_socket_group: contains a control character"},
        Refusal{"message bound", [](v1::ApiConfig& c) { c.set_max_receive_message_bytes(10); },
                "api.max_receive_message_bytes: must be in [1024, 16777216] (got 10)"},
        Refusal{"stream bound", [](v1::ApiConfig& c) { c.set_max_watch_streams(5000); },
                "api.max_watch_streams: must be in [1, 4096] (got 5000)"},
        Refusal{"queue bound", [](v1::ApiConfig& c) { c.set_watch_queue_events(8); },
                "api.watch_queue_events: must be in [16, 1048576] (got 8)"},
        Refusal{"read access", [](v1::ApiConfig& c) { c.set_tcp_read_access(static_cast<v1::ReadAccess>(5)); },
                "api.tcp_read_access: unknown value 5"},
        Refusal{"read token without tcp", [](v1::ApiConfig& c) { c.set_read_token_file("/t"); },
                "api.read_token_file: set without api.tcp_address"},
        Refusal{"one file for both roles",
                [](v1::ApiConfig& c) {
                  c.set_tcp_address("127.0.0.1:7000");
                  c.set_insecure_loopback_tcp(true);
                  c.set_token_file("/t");
                  c.set_read_token_file("/t");
                },
                "api.read_token_file: is the admin token_file: a token has one role"},
        Refusal{"admin names without a ca",
                [](v1::ApiConfig& c) {
                  c.set_tcp_address("127.0.0.1:7000");
                  c.mutable_tls()->set_cert_file("/s.pem");
                  c.mutable_tls()->set_key_file("/s.key");
                  c.mutable_tls()->add_admin_certificate_names("operator");
                },
                "api.tls.admin_certificate_names: set without api.tls.client_ca_file"},
        Refusal{"reload interval",
                [](v1::ApiConfig& c) {
                  c.set_tcp_address("127.0.0.1:7000");
                  c.mutable_tls()->set_cert_file("/s.pem");
                  c.mutable_tls()->set_key_file("/s.key");
                  c.mutable_tls()->set_reload_interval_seconds(100000);
                },
                "api.tls.reload_interval_seconds: must be in [1, 86400] (got 100000)"},
        Refusal{"admin group without socket",
                [](v1::ApiConfig& c) {
                  c.set_unix_socket_disabled(true);
                  c.set_unix_socket_admin_group("adm");
                },
                "api.unix_socket_admin_group: set while api.unix_socket_disabled is true"},
        Refusal{"streams per connection", [](v1::ApiConfig& c) { c.set_max_streams_per_connection(0xffff); },
                "api.max_streams_per_connection: must be in [1, 4096] (got 65535)"}),
    [](const auto& info) {
      std::string name = info.param.name;
      for (char& ch : name) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
      return name;
    });

TEST(ApiConfig, LoopbackHosts) {
  for (const char* host : {"127.0.0.1", "127.1.2.3", "::1", "localhost"}) EXPECT_TRUE(IsLoopbackHost(host)) << host;
  for (const char* host : {"0.0.0.0", "::", "10.0.0.1", "128.0.0.1", "::ffff:10.0.0.1", "localhost.example.com", ""}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  }
  auto v6 = SplitHostPort("[::1]:0");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 0);
  EXPECT_FALSE(SplitHostPort("::1:80")) << "an IPv6 address needs brackets";
  EXPECT_FALSE(SplitHostPort(":80"));
  EXPECT_FALSE(SplitHostPort("host:80x"));
}

TEST(Validate, ControllerNames) {
  EXPECT_TRUE(ValidateControllerName("uvnvme:1234:0", "c", true));
  EXPECT_TRUE(ValidateControllerName("", "c", false));
  EXPECT_EQ(ValidateControllerName("", "queue.controller", true).error().message, "queue.controller: must not be empty");
  EXPECT_EQ(ValidateControllerName("nvme0\n", "c", true).error().message,
            "c: character 5 is not allowed (letters, digits and . _ : - only)");
  EXPECT_TRUE(ValidateControllerName(std::string(64, 'a'), "c", true));
  EXPECT_FALSE(ValidateControllerName(std::string(65, 'a'), "c", true));
}

TEST(Validate, SetPolicyChecksEachFieldAlone) {
  v1::SetPolicyRequest request;
  request.set_replace(true);
  EXPECT_TRUE(ValidateSetPolicyRequest(request)) << "replace with nothing clears a level";
  request.set_replace(false);
  request.mutable_policy()->set_backoff_windows(0);
  EXPECT_TRUE(ValidateSetPolicyRequest(request)) << "0 disables backoff";
  request.mutable_policy()->set_max_poll_windows(0);
  EXPECT_EQ(ValidateSetPolicyRequest(request).error().message, "policy.max_poll_windows: must be in [1, 16777216] (got 0)");
}

TEST(Validate, SetQueueModeBounds) {
  v1::SetQueueModeRequest request;
  request.mutable_queue()->set_controller("nvme0");
  request.mutable_queue()->set_queue(1);
  request.set_mode(v1::REAP_MODE_POLL);
  request.set_duration_ns(kMaxOverrideDurationNs);
  EXPECT_TRUE(ValidateSetQueueModeRequest(request));
  request.set_duration_ns(kMaxOverrideDurationNs + 1);
  EXPECT_FALSE(ValidateSetQueueModeRequest(request));
  request.set_mode(v1::REAP_MODE_UNSPECIFIED);
  request.set_duration_ns(0);
  EXPECT_TRUE(ValidateSetQueueModeRequest(request)) << "clearing an override";
}

TEST(Validate, QuotedKeepsOutsideInputOnOneLine) {
  EXPECT_EQ(Quoted("nvme0"), "'nvme0'");
  EXPECT_EQ(Quoted("a\nb'c\\d\x01"), "'a\\nb\\'c\\\\d\\x01'");
  EXPECT_EQ(Quoted(std::string(100, 'x')), "'" + std::string(80, 'x') + "...'");
}

TEST(StatusMap, EveryErrorCodeHasItsGrpcCode) {
  const std::pair<ErrorCode, grpc::StatusCode> expected[] = {
      {ErrorCode::kInvalidArgument, grpc::StatusCode::INVALID_ARGUMENT},
      {ErrorCode::kNotFound, grpc::StatusCode::NOT_FOUND},
      {ErrorCode::kPermissionDenied, grpc::StatusCode::PERMISSION_DENIED},
      {ErrorCode::kUnavailable, grpc::StatusCode::UNAVAILABLE},
      {ErrorCode::kFailedPrecondition, grpc::StatusCode::FAILED_PRECONDITION},
      {ErrorCode::kUnsupported, grpc::StatusCode::UNIMPLEMENTED},
      {ErrorCode::kRefused, grpc::StatusCode::FAILED_PRECONDITION},
      {ErrorCode::kIo, grpc::StatusCode::INTERNAL},
      {ErrorCode::kInternal, grpc::StatusCode::INTERNAL},
  };
  for (const auto& [code, grpc_code] : expected) {
    EXPECT_EQ(ToGrpcCode(code), grpc_code) << ErrorCodeName(code);
    const grpc::Status status = ToGrpcStatus(MakeError(code, "queue nvme0:q9: no such queue"));
    EXPECT_EQ(status.error_message(), "queue nvme0:q9: no such queue");
  }
  EXPECT_EQ(StatusCodeName(grpc::StatusCode::RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
  EXPECT_EQ(StatusCodeName(grpc::StatusCode::UNAUTHENTICATED), "UNAUTHENTICATED");
  EXPECT_EQ(StatusCodeName(static_cast<grpc::StatusCode>(99)), "UNKNOWN");
}

}  // namespace
}  // namespace nvmeadapt::api
