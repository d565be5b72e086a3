// SPDX-License-Identifier: Apache-2.0
#include "agent/actuate/fabrics_connector.h"

#include <libnvme.h>
#include <syslog.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

namespace nvmeadapt::actuate {
namespace {

using TextField = std::string FabricsSettings::*;
using NumberField = int FabricsSettings::*;
using FlagField = bool FabricsSettings::*;

const std::map<std::string, TextField, std::less<>>& TextOptions() {
  static const std::map<std::string, TextField, std::less<>> options = {
      {"--transport", &FabricsSettings::transport},   {"--traddr", &FabricsSettings::traddr},
      {"--trsvcid", &FabricsSettings::trsvcid},       {"--nqn", &FabricsSettings::subsysnqn},
      {"--hostnqn", &FabricsSettings::hostnqn},       {"--hostid", &FabricsSettings::hostid},
      {"--host-traddr", &FabricsSettings::host_traddr}, {"--host-iface", &FabricsSettings::host_iface},
      {"--dhchap-secret", &FabricsSettings::dhchap_secret},
      {"--dhchap-ctrl-secret", &FabricsSettings::dhchap_ctrl_secret}};
  return options;
}

const std::map<std::string, NumberField, std::less<>>& NumberOptions() {
  static const std::map<std::string, NumberField, std::less<>> options = {
      {"--nr-io-queues", &FabricsSettings::nr_io_queues},       {"--queue-size", &FabricsSettings::queue_size},
      {"--keep-alive-tmo", &FabricsSettings::keep_alive_tmo},   {"--reconnect-delay", &FabricsSettings::reconnect_delay},
      {"--ctrl-loss-tmo", &FabricsSettings::ctrl_loss_tmo},     {"--fast_io_fail_tmo", &FabricsSettings::fast_io_fail_tmo}};
  return options;
}

const std::map<std::string, FlagField, std::less<>>& FlagOptions() {
  static const std::map<std::string, FlagField, std::less<>> options = {
      {"--tls", &FabricsSettings::tls},
      {"--hdr-digest", &FabricsSettings::hdr_digest},
      {"--data-digest", &FabricsSettings::data_digest}};
  return options;
}

bool ParseInt(std::string_view text, int* value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return error == std::errc() && end == text.data() + text.size();
}

// The word as a message may show it: the name alone for a secret.
std::string Shown(const std::string& name, std::string_view value) {
  return name.find("secret") != std::string::npos ? name + "=<secret>" : name + "=" + std::string(value);
}

// libnvme's messages (LOG_NOTICE and worse) go to a buffer instead of the daemon's stderr, to be quoted in the
// error of the call that logged them.
class LibnvmeRoot {
 public:
  LibnvmeRoot() : log_(open_memstream(&text_, &size_)), root_(nvme_create_root(log_, LOG_NOTICE)) {}
  ~LibnvmeRoot() {
    if (root_ != nullptr) nvme_free_tree(root_);
    if (log_ != nullptr) fclose(log_);
    free(text_);
  }
  LibnvmeRoot(const LibnvmeRoot&) = delete;
  LibnvmeRoot& operator=(const LibnvmeRoot&) = delete;
  nvme_root_t get() const { return root_; }
  // What libnvme logged so far, on one line.
  std::string Logged() {
    if (log_ == nullptr || fflush(log_) != 0 || text_ == nullptr) return "";
    std::string text(text_, size_);
    for (char& c : text) c = c == '\n' ? ';' : c;
    while (!text.empty() && (text.back() == ';' || text.back() == ' ')) text.pop_back();
    return text;
  }

 private:
  char* text_ = nullptr;
  size_t size_ = 0;
  FILE* log_;
  nvme_root_t root_;
};

// errno after a failed libnvme fabrics call: libnvme's own codes (ENVME_CONNECT_*) or a system one.
std::string ErrnoText(int err) {
  if (err >= ENVME_CONNECT_RESOLVE) {
    const char* text = nvme_errno_to_string(err);
    return text != nullptr ? text : "libnvme error " + std::to_string(err);
  }
  return std::strerror(err);
}

ErrorCode ConnectErrorCode(int err) {
  switch (err) {
    case ENVME_CONNECT_OPEN: return ErrorCode::kUnsupported;  // no /dev/nvme-fabrics: nvme_fabrics not loaded
    case ENVME_CONNECT_CONNREFUSED:
    case ENVME_CONNECT_RESOLVE: return ErrorCode::kUnavailable;
    default: return ErrorCode::kRefused;
  }
}

const char* OrNull(const std::string& text) { return text.empty() ? nullptr : text.c_str(); }

class LibnvmeConnector final : public FabricsConnector {
 public:
  Status Connect(const std::vector<std::string>& options, uint32_t poll_queues) override {
    NA_ASSIGN_OR_RETURN(const FabricsSettings s, ParseFabricsOptions(options, poll_queues));
    const std::string what = "connect " + s.transport + " " + s.traddr + ":" + s.trsvcid + " " + s.subsysnqn;
    LibnvmeRoot root;
    if (root.get() == nullptr) return MakeError(ErrorCode::kInternal, what + ": libnvme could not start");
    nvme_host_t host = s.hostnqn.empty() ? nvme_default_host(root.get())
                                         : nvme_lookup_host(root.get(), s.hostnqn.c_str(), OrNull(s.hostid));
    nvme_ctrl_t ctrl = host == nullptr ? nullptr
                                       : nvme_create_ctrl(root.get(), s.subsysnqn.c_str(), s.transport.c_str(),
                                                          s.traddr.c_str(), OrNull(s.host_traddr),
                                                          OrNull(s.host_iface), OrNull(s.trsvcid));
    if (ctrl == nullptr) {
      return MakeError(ErrorCode::kIo, what + ": libnvme could not describe it (" + root.Logged() + ")");
    }
    if (!s.dhchap_secret.empty()) nvme_host_set_dhchap_key(host, s.dhchap_secret.c_str());
    if (!s.dhchap_ctrl_secret.empty()) nvme_ctrl_set_dhchap_key(ctrl, s.dhchap_ctrl_secret.c_str());
    nvme_fabrics_config config;
    nvmf_default_config(&config);
    config.host_traddr = const_cast<char*>(OrNull(s.host_traddr));
    config.host_iface = const_cast<char*>(OrNull(s.host_iface));
    config.nr_io_queues = s.nr_io_queues;
    config.nr_poll_queues = s.nr_poll_queues;
    config.queue_size = s.queue_size;
    config.keep_alive_tmo = s.keep_alive_tmo;
    config.reconnect_delay = s.reconnect_delay;
    config.ctrl_loss_tmo = s.ctrl_loss_tmo;
    config.fast_io_fail_tmo = s.fast_io_fail_tmo;
    config.tls = s.tls;
    config.hdr_digest = s.hdr_digest;
    config.data_digest = s.data_digest;
    if (nvmf_add_ctrl(host, ctrl, &config) != 0) {
      const int err = errno;
      nvme_free_ctrl(ctrl);  // only a connected controller joins the tree that frees the rest
      const std::string logged = root.Logged();
      return MakeError(ConnectErrorCode(err), what + ": " + ErrnoText(err) + (logged.empty() ? "" : " (" + logged + ")"));
    }
    return OkStatus();
  }

  Status Disconnect(const std::string& controller) override {
    LibnvmeRoot root;
    if (root.get() == nullptr) return MakeError(ErrorCode::kInternal, "disconnect " + controller + ": libnvme could not start");
    nvme_ctrl_t ctrl = nvme_scan_ctrl(root.get(), controller.c_str());
    if (ctrl == nullptr) {
      return MakeError(ErrorCode::kNotFound, "disconnect " + controller + ": no such controller (" + root.Logged() + ")");
    }
    if (nvme_disconnect_ctrl(ctrl) != 0) {
      const int err = errno;
      return MakeError(ErrorCode::kRefused, "disconnect " + controller + ": " + std::strerror(err));
    }
    return OkStatus();
  }
};

}  // namespace

Result<FabricsSettings> ParseFabricsOptions(const std::vector<std::string>& options, uint32_t poll_queues) {
  FabricsSettings settings;
  settings.nr_poll_queues = static_cast<int>(poll_queues);
  for (const std::string& word : options) {
    const size_t equals = word.find('=');
    const std::string name = word.substr(0, equals);
    const std::string_view value = equals == std::string::npos ? std::string_view() : std::string_view(word).substr(equals + 1);
    if (equals == std::string::npos) {
      if (const auto flag = FlagOptions().find(name); flag != FlagOptions().end()) {
        settings.*(flag->second) = true;
        continue;
      }
      if (name == "--concat") {
        return MakeError(ErrorCode::kUnsupported, "--concat (TLS on a secure channel concatenation): libnvme 1.3 cannot connect with it");
      }
    } else if (const auto text = TextOptions().find(name); text != TextOptions().end() && !value.empty()) {
      settings.*(text->second) = std::string(value);
      continue;
    } else if (const auto number = NumberOptions().find(name); number != NumberOptions().end()) {
      int parsed = 0;
      if (!ParseInt(value, &parsed) || parsed < -1) {
        return MakeError(ErrorCode::kInvalidArgument, Shown(name, value) + ": not a number libnvme takes");
      }
      if (parsed == 0 && name == "--fast_io_fail_tmo") {
        return MakeError(ErrorCode::kUnsupported, Shown(name, value) + ": libnvme 1.3 leaves a 0 out (the kernel's default, off)");
      }
      settings.*(number->second) = parsed;
      continue;
    } else if (name == "--keyring") {
      return MakeError(ErrorCode::kUnsupported, Shown(name, value) + ": libnvme 1.3 cannot name a keyring (only the default .nvme)");
    }
    return MakeError(ErrorCode::kInvalidArgument, Shown(name, value) + ": not a connect option the reconnect lever records");
  }
  if (settings.transport.empty() || settings.traddr.empty() || settings.subsysnqn.empty()) {
    return MakeError(ErrorCode::kInvalidArgument, "a connection needs --transport, --traddr and --nqn");
  }
  return settings;
}

std::shared_ptr<FabricsConnector> LibnvmeFabricsConnector() { return std::make_shared<LibnvmeConnector>(); }

}  // namespace nvmeadapt::actuate
