// SPDX-License-Identifier: Apache-2.0
// The ApiConfig message with its defaults filled in and every rule that needs no file system checked:
// at least one listener, TCP only with TLS or (loopback only) the insecure flag, bounds in range.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "nvmeadapt/v1/config.pb.h"

namespace nvmeadapt::api {

inline constexpr std::string_view kDefaultUnixSocket = "/run/nvme-adapt/agent.sock";
inline constexpr std::string_view kDefaultSocketGroup = "nvme-adapt";
inline constexpr uint32_t kDefaultMaxReceiveMessageBytes = 64 << 10;
inline constexpr uint32_t kDefaultMaxWatchStreams = 128;
inline constexpr uint32_t kDefaultWatchQueueEvents = 1024;
inline constexpr uint32_t kDefaultStreamsPerConnection = 256;
inline constexpr uint32_t kDefaultTlsReloadSeconds = 60;

struct ApiSettings {
  std::optional<std::string> unix_socket;  // nullopt: no Unix socket
  std::string unix_socket_group;
  std::string tcp_address;                 // empty: no TCP
  bool tcp_insecure_loopback = false;      // else TCP uses TLS
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;          // empty: client certificates are not requested
  std::vector<std::string> admin_certificate_names;  // client certificates with the admin role
  uint32_t tls_reload_seconds = kDefaultTlsReloadSeconds;
  std::string token_file;                  // the admin token; empty: none accepted
  std::string read_token_file;             // the read-only token; empty: none accepted
  std::string unix_socket_admin_group;     // empty: every Unix socket peer is admin
  bool tcp_read_open = false;              // read-only calls over TCP need no credentials
  uint32_t max_streams_per_connection = kDefaultStreamsPerConnection;
  uint32_t max_receive_message_bytes = kDefaultMaxReceiveMessageBytes;
  uint32_t max_watch_streams = kDefaultMaxWatchStreams;
  uint32_t watch_queue_events = kDefaultWatchQueueEvents;
};

// Errors name the field ("api.tcp_address: ...").
Result<ApiSettings> ResolveApiConfig(const v1::ApiConfig& config);

struct HostPort {
  std::string host;  // without brackets for IPv6
  uint16_t port = 0;
};
// "127.0.0.1:50051", "[::1]:0", "localhost:9000".
Result<HostPort> SplitHostPort(std::string_view address);
// 127.0.0.0/8, ::1 and "localhost".
bool IsLoopbackHost(std::string_view host);

}  // namespace nvmeadapt::api
