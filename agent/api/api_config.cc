// SPDX-License-Identifier: Apache-2.0
#include "agent/api/api_config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <charconv>

#include "agent/api/validate.h"

namespace nvmeadapt::api {
namespace {

Error Invalid(std::string_view field, std::string_view problem) {
  return MakeError(ErrorCode::kInvalidArgument, "api." + std::string(field) + ": " + std::string(problem));
}

// The socket is bound inside a private directory next to its final path first ("DIR/.agent-sock.XXXXXX/NAME"),
// so that path must fit in sockaddr_un too.
constexpr size_t kPrivateDirOverhead = sizeof("/.agent-sock.XXXXXX") - 1;

Status CheckRange(uint32_t value, uint32_t low, uint32_t high, std::string_view field) {
  if (value < low || value > high) {
    return Invalid(field, "must be in [" + std::to_string(low) + ", " + std::to_string(high) + "] (got " +
                              std::to_string(value) + ")");
  }
  return OkStatus();
}

// Paths and names end up in logs and error messages: one line each.
Status NoControlCharacters(const std::string& value, std::string_view field) {
  for (char c : value) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return Invalid(field, "contains a control character");
  }
  return OkStatus();
}

}  // namespace

Result<HostPort> SplitHostPort(std::string_view address) {
  HostPort out;
  std::string_view port_text;
  if (address.starts_with('[')) {
    const size_t close = address.find(']');
    if (close == std::string_view::npos || close + 1 >= address.size() || address[close + 1] != ':') {
      return MakeError(ErrorCode::kInvalidArgument, "expected [IPv6]:port, got " + Quoted(address));
    }
    out.host = std::string(address.substr(1, close - 1));
    port_text = address.substr(close + 2);
  } else {
    const size_t colon = address.rfind(':');
    if (colon == std::string_view::npos || address.find(':') != colon) {
      return MakeError(ErrorCode::kInvalidArgument, "expected host:port, got " + Quoted(address));
    }
    out.host = std::string(address.substr(0, colon));
    port_text = address.substr(colon + 1);
  }
  unsigned port = 0;
  const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (out.host.empty() || port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
      port > 65535) {
    return MakeError(ErrorCode::kInvalidArgument, "expected host:port with a port in [0, 65535], got " +
                                                      Quoted(address));
  }
  out.port = static_cast<uint16_t>(port);
  return out;
}

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost") return true;
  const std::string text(host);
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

namespace {

Status NoControlCharactersInAnyField(const v1::ApiConfig& config) {
  for (const auto& [value, field] : {std::pair{&config.unix_socket(), "unix_socket"},
                                     {&config.unix_socket_group(), "unix_socket_group"},
                                     {&config.tcp_address(), "tcp_address"},
                                     {&config.tls().cert_file(), "tls.cert_file"},
                                     {&config.tls().key_file(), "tls.key_file"},
                                     {&config.tls().client_ca_file(), "tls.client_ca_file"},
                                     {&config.token_file(), "token_file"},
                                     {&config.read_token_file(), "read_token_file"},
                                     {&config.unix_socket_admin_group(), "unix_socket_admin_group"}}) {
    NA_RETURN_IF_ERROR(NoControlCharacters(*value, field));
  }
  for (const std::string& name : config.tls().admin_certificate_names()) {
    if (name.empty()) return Invalid("tls.admin_certificate_names", "an empty name");
    NA_RETURN_IF_ERROR(NoControlCharacters(name, "tls.admin_certificate_names"));
  }
  return OkStatus();
}

Status ResolveUnixSocket(const v1::ApiConfig& config, ApiSettings& s) {
  if (!config.unix_socket_disabled()) {
    std::string path = config.unix_socket().empty() ? std::string(kDefaultUnixSocket) : config.unix_socket();
    if (path.front() != '/') return Invalid("unix_socket", "must be an absolute path, got " + Quoted(path));
    if (path.back() == '/') return Invalid("unix_socket", "must name a file, not a directory");
    const size_t limit = sizeof(sockaddr_un::sun_path) - 1 - kPrivateDirOverhead;
    if (path.size() > limit) {
      return Invalid("unix_socket", "longer than " + std::to_string(limit) + " characters");
    }
    s.unix_socket = std::move(path);
  } else if (!config.unix_socket().empty()) {
    return Invalid("unix_socket", "set while api.unix_socket_disabled is true");
  }
  s.unix_socket_group =
      config.unix_socket_group().empty() ? std::string(kDefaultSocketGroup) : config.unix_socket_group();

  s.unix_socket_admin_group = config.unix_socket_admin_group();
  if (!s.unix_socket && !s.unix_socket_admin_group.empty()) {
    return Invalid("unix_socket_admin_group", "set while api.unix_socket_disabled is true");
  }
  return OkStatus();
}

Status ResolveTls(const v1::ApiConfig& config, ApiSettings& s) {
  if (config.tls().cert_file().empty() || config.tls().key_file().empty()) {
    return Invalid("tcp_address", "TCP needs TLS (api.tls.cert_file and api.tls.key_file) or, on a "
                                  "loopback address only, api.insecure_loopback_tcp");
  }
  s.tls_cert_file = config.tls().cert_file();
  s.tls_key_file = config.tls().key_file();
  s.tls_client_ca_file = config.tls().client_ca_file();
  if (config.tls().admin_certificate_names_size() > 0 && s.tls_client_ca_file.empty()) {
    return Invalid("tls.admin_certificate_names", "set without api.tls.client_ca_file");
  }
  s.admin_certificate_names.assign(config.tls().admin_certificate_names().begin(),
                                   config.tls().admin_certificate_names().end());
  if (config.tls().reload_interval_seconds() != 0) {
    NA_RETURN_IF_ERROR(CheckRange(config.tls().reload_interval_seconds(), 1, 86400, "tls.reload_interval_seconds"));
    s.tls_reload_seconds = config.tls().reload_interval_seconds();
  }
  return OkStatus();
}

Status ResolveTcp(const v1::ApiConfig& config, ApiSettings& s) {
  const bool tls_set = !config.tls().cert_file().empty() || !config.tls().key_file().empty() ||
                       !config.tls().client_ca_file().empty() || config.tls().admin_certificate_names_size() > 0;
  if (config.tcp_address().empty()) {
    if (!s.unix_socket) return Invalid("unix_socket_disabled", "no listener left (api.tcp_address is empty)");
    if (config.insecure_loopback_tcp()) return Invalid("insecure_loopback_tcp", "set without api.tcp_address");
    if (tls_set) return Invalid("tls", "set without api.tcp_address");
    if (!config.token_file().empty()) return Invalid("token_file", "set without api.tcp_address");
    if (!config.read_token_file().empty()) return Invalid("read_token_file", "set without api.tcp_address");
    return OkStatus();
  }
  auto host_port = SplitHostPort(config.tcp_address());
  if (!host_port) return Invalid("tcp_address", host_port.error().message);
  s.tcp_address = config.tcp_address();
  if (config.insecure_loopback_tcp()) {
    if (!IsLoopbackHost(host_port->host)) {
      return Invalid("tcp_address", "insecure_loopback_tcp allows only a loopback address (127.0.0.0/8, ::1, "
                                    "localhost), got " + Quoted(config.tcp_address()));
    }
    if (tls_set) return Invalid("insecure_loopback_tcp", "cannot be combined with api.tls");
    s.tcp_insecure_loopback = true;
  } else {
    NA_RETURN_IF_ERROR(ResolveTls(config, s));
  }
  s.token_file = config.token_file();
  s.read_token_file = config.read_token_file();
  if (!s.token_file.empty() && s.token_file == s.read_token_file) {
    return Invalid("read_token_file", "is the admin token_file: a token has one role");
  }
  return OkStatus();
}

Status ResolveLimits(const v1::ApiConfig& config, ApiSettings& s) {
  if (config.max_receive_message_bytes() != 0) {
    NA_RETURN_IF_ERROR(CheckRange(config.max_receive_message_bytes(), 1024, 16 << 20, "max_receive_message_bytes"));
    s.max_receive_message_bytes = config.max_receive_message_bytes();
  }
  if (config.max_watch_streams() != 0) {
    NA_RETURN_IF_ERROR(CheckRange(config.max_watch_streams(), 1, 4096, "max_watch_streams"));
    s.max_watch_streams = config.max_watch_streams();
  }
  if (config.max_streams_per_connection() != 0) {
    NA_RETURN_IF_ERROR(CheckRange(config.max_streams_per_connection(), 1, 4096, "max_streams_per_connection"));
    s.max_streams_per_connection = config.max_streams_per_connection();
  }
  if (config.watch_queue_events() != 0) {
    NA_RETURN_IF_ERROR(CheckRange(config.watch_queue_events(), 16, 1 << 20, "watch_queue_events"));
    s.watch_queue_events = config.watch_queue_events();
  }
  return OkStatus();
}

}  // namespace

Result<ApiSettings> ResolveApiConfig(const v1::ApiConfig& config) {
  NA_RETURN_IF_ERROR(NoControlCharactersInAnyField(config));
  ApiSettings s;
  NA_RETURN_IF_ERROR(ResolveUnixSocket(config, s));
  NA_RETURN_IF_ERROR(ResolveTcp(config, s));
  if (!v1::ReadAccess_IsValid(config.tcp_read_access())) {
    return Invalid("tcp_read_access", "unknown value " + std::to_string(static_cast<int>(config.tcp_read_access())));
  }
  s.tcp_read_open = config.tcp_read_access() == v1::READ_ACCESS_OPEN;
  NA_RETURN_IF_ERROR(ResolveLimits(config, s));
  return s;
}

}  // namespace nvmeadapt::api
