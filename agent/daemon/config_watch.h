// SPDX-License-Identifier: Apache-2.0
// Config reload: on SIGHUP and when the config file changes on disk. Kubernetes updates a mounted
// ConfigMap with no signal: the kubelet writes a new hidden directory and renames a `..data` symlink
// over the old one, so the file's path stays while what it resolves to changes. The watch follows the
// file's directory with inotify and reloads once the resolved file is another one or has changed.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "common/result.h"
#include "nvmeadapt/v1/config.pb.h"

namespace nvmeadapt::metrics {
class AgentMetrics;
}

namespace nvmeadapt::daemon {

class Agent;

// Loads the config file (with the command line's flags over it) and applies its policies and log level.
// A bad file, or policies the agent refuses, keep the running config; either way the outcome is told in
// the log, on the event stream (EVENT_KIND_POLICY) and in nvme_adapt_config_reloads_total.
class ConfigReloader {
 public:
  using Loader = std::function<Result<v1::Config>()>;
  ConfigReloader(std::string config_path, Loader load, Agent& agent, metrics::AgentMetrics* metrics);

  // `cause` says what asked for it ("SIGHUP", "file changed"), for the log and the event.
  Status Reload(std::string_view cause);

 private:
  void Report(std::string_view cause, const Status& outcome, const std::string& policy_not_applied);

  std::string config_path_;
  Loader load_;
  Agent& agent_;
  metrics::AgentMetrics* metrics_;
};

// What a path resolves to now; two differ when the file was replaced, swapped or written.
struct FileIdentity {
  std::string resolved;  // the path with every symlink followed; empty when it does not resolve
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  int64_t modified_ns = 0;
  bool operator==(const FileIdentity&) const = default;
};
FileIdentity IdentityOf(const std::string& path);

// Calls on_change (on its own thread) after a change of the file, once the directory has been quiet for
// `settle_ms`: a kubelet update is several renames and an unlink, an editor's save a write and a rename.
class ConfigWatch {
 public:
  static Result<std::unique_ptr<ConfigWatch>> Start(std::string path, std::function<void()> on_change,
                                                    int settle_ms = 200);
  ~ConfigWatch();  // stops the thread
  ConfigWatch(const ConfigWatch&) = delete;
  ConfigWatch& operator=(const ConfigWatch&) = delete;

 private:
  ConfigWatch(std::string path, std::function<void()> on_change, int settle_ms, int inotify_fd, int stop_fd);
  void Loop();
  bool DrainEvents();  // false when the inotify descriptor failed

  std::string path_;
  std::function<void()> on_change_;
  int settle_ms_;
  int inotify_fd_;
  int stop_fd_;
  FileIdentity last_;
  std::thread thread_;
};

}  // namespace nvmeadapt::daemon
