// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/config_watch.h"

#include <pthread.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <filesystem>

#include "agent/config/node_config.h"
#include "agent/config/node_identity.h"
#include "agent/config/policy_convert.h"
#include "agent/daemon/agent.h"
#include "agent/metrics/agent_metrics.h"
#include "common/log.h"

namespace nvmeadapt::daemon {

ConfigReloader::ConfigReloader(std::string config_path, Loader load, Agent& agent, metrics::AgentMetrics* metrics)
    : config_path_(std::move(config_path)), load_(std::move(load)), agent_(agent), metrics_(metrics) {}

Status ConfigReloader::Reload(std::string_view cause) {
  std::string policy_not_applied;
  Status outcome = [&]() -> Status {
    NA_ASSIGN_OR_RETURN(auto reloaded, load_());
    // Off the loop: the labels file may have changed with the config, or alone (a pod relabelled).
    NA_ASSIGN_OR_RETURN(auto node, config::ReadNodeIdentity(reloaded.node_labels_file()));
    // The policies first: a refusal there must not leave the new log level behind.
    NA_ASSIGN_OR_RETURN(auto applied, agent_.ReloadConfigPolicies(config::PoliciesOf(reloaded), node));
    if (!applied.policy_applied) policy_not_applied = applied.why_not;
    // The loader validated it.
    NA_RETURN_IF_ERROR(agent_.ReloadNode(*config::NodeLayerFromConfig(reloaded.node())));
    SetLogLevel(*ParseLogLevel(reloaded.log_level()));
    return OkStatus();
  }();
  Report(cause, outcome, policy_not_applied);
  return outcome;
}

void ConfigReloader::Report(std::string_view cause, const Status& outcome, const std::string& policy_not_applied) {
  // What took effect and what did not (issue 15, finding 8): only the log level, the node settings and the
  // policy are reloadable, and a policy persisted over the API wins over the file's.
  const std::string head = "reload (" + std::string(cause) + "): config " + config_path_ + ": ";
  const std::string rest = "; other settings (api, metrics, levers, paths) take effect at the next start";
  std::string message =
      !outcome ? "reload refused (" + std::string(cause) + "), keeping the running config: " + outcome.error().message
      : policy_not_applied.empty() ? head + "log level, node settings and policy applied" + rest
                                   : head + "log level and node settings applied; policy NOT applied: " + policy_not_applied + rest;
  if (!outcome) {
    NA_ERROR(message);
  } else if (!policy_not_applied.empty()) {
    NA_WARN(message);
  } else {
    NA_INFO(message);
  }
  if (metrics_) metrics_->OnConfigReload(outcome.ok());
  v1::Event event;
  event.set_time_unix_ns(std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count());
  event.set_kind(v1::EVENT_KIND_POLICY);
  event.set_message(std::move(message));
  agent_.events().Publish(std::move(event));
}

FileIdentity IdentityOf(const std::string& path) {
  FileIdentity identity;
  char resolved[PATH_MAX];
  struct stat st {};
  if (realpath(path.c_str(), resolved) == nullptr || stat(resolved, &st) != 0) return identity;
  identity.resolved = resolved;
  identity.device = st.st_dev;
  identity.inode = st.st_ino;
  identity.size = st.st_size;
  identity.modified_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  return identity;
}

Result<std::unique_ptr<ConfigWatch>> ConfigWatch::Start(std::string path, std::function<void()> on_change,
                                                        int settle_ms) {
  const std::string directory = std::filesystem::path(path).parent_path().string();
  const int inotify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (inotify_fd < 0) return SysError("inotify_init1 for", path, errno);
  // The directory, not the file: the kubelet's swap replaces the symlinks in it and never writes the
  // file; an editor's save is a rename into it. IN_CLOSE_WRITE covers a file written in place.
  constexpr uint32_t kEvents = IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CLOSE_WRITE | IN_ATTRIB |
                               IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;
  if (inotify_add_watch(inotify_fd, directory.empty() ? "." : directory.c_str(), kEvents) < 0) {
    const int err = errno;
    close(inotify_fd);
    return SysError("inotify_add_watch", directory, err);
  }
  const int stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd < 0) {
    const int err = errno;
    close(inotify_fd);
    return SysError("eventfd for the watch of", path, err);
  }
  return std::unique_ptr<ConfigWatch>(
      new ConfigWatch(std::move(path), std::move(on_change), settle_ms, inotify_fd, stop_fd));
}

ConfigWatch::ConfigWatch(std::string path, std::function<void()> on_change, int settle_ms, int inotify_fd,
                         int stop_fd)
    : path_(std::move(path)),
      on_change_(std::move(on_change)),
      settle_ms_(settle_ms),
      inotify_fd_(inotify_fd),
      stop_fd_(stop_fd),
      last_(IdentityOf(path_)) {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "na-config-watch");
    Loop();
  });
}

ConfigWatch::~ConfigWatch() {
  const uint64_t one = 1;
  if (write(stop_fd_, &one, sizeof one) != static_cast<ssize_t>(sizeof one)) {
    NA_ERROR(SysError("write to the stop eventfd of the watch of", path_, errno).message);
  }
  if (thread_.joinable()) thread_.join();
  close(inotify_fd_);
  close(stop_fd_);
}

bool ConfigWatch::DrainEvents() {
  alignas(inotify_event) char buffer[16 * (sizeof(inotify_event) + NAME_MAX + 1)];
  for (;;) {
    const ssize_t n = read(inotify_fd_, buffer, sizeof buffer);
    if (n > 0) continue;
    if (n < 0 && errno == EAGAIN) return true;
    if (n < 0 && errno == EINTR) continue;
    NA_ERROR(SysError("read inotify events of the directory of", path_, n < 0 ? errno : EIO).message
             << "; changes of the file are no longer noticed (SIGHUP still reloads)");
    return false;
  }
}

void ConfigWatch::Loop() {
  pollfd fds[2] = {{inotify_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
  bool pending = false;
  for (;;) {
    // While a change is pending, wait only until the directory has been quiet for settle_ms_.
    const int ready = poll(fds, 2, pending ? settle_ms_ : -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      NA_ERROR(SysError("poll on the watch of", path_, errno).message << "; changes of the file are no longer noticed");
      return;
    }
    if (fds[1].revents != 0) return;
    if (fds[0].revents != 0) {
      if (!DrainEvents()) return;
      pending = true;
      continue;
    }
    pending = false;
    FileIdentity now = IdentityOf(path_);
    // Unchanged: something else in the directory changed. Gone: wait until it is back rather than
    // reload into the built-in defaults halfway through someone's replacement of the file.
    if (now == last_ || now.resolved.empty()) continue;
    last_ = std::move(now);
    on_change_();
  }
}

}  // namespace nvmeadapt::daemon
