// uvnvme driver processes: every $runtime_dir/uvnvme/*.sock answers {"op": "list"} with its queues
// (docs/uvnvme-control.md). Queues are grouped into controllers "uvnvme:PID:CTRL".
//
// The directory is shared by every user allowed to run a driver, so nothing in it is believed on its word:
// ControlClient refuses links, non-sockets and sockets not owned by their listener; the pid uprobes attach to
// is the listener's as the kernel reports it, and a process reporting another pid is refused.
#include <sys/stat.h>

#include <map>

#include "agent/discover/control_client.h"
#include "agent/discover/discovery.h"
#include "agent/discover/fs.h"

namespace nvmeadapt::discover {
namespace {

constexpr std::string_view kSocketSuffix = ".sock";
// Sockets asked per scan: a directory flooded with files costs a bounded time and a bounded skipped list.
constexpr size_t kMaxDriverSockets = 256;

Result<uint32_t> UnsignedField(const nlohmann::json& object, const char* field, const std::string& where) {
  const auto it = object.find(field);
  if (it == object.end() || !it->is_number_unsigned() || it->get<uint64_t>() > UINT32_MAX) {
    return MakeError(ErrorCode::kIo, where + ": \"" + field + "\" missing or not an unsigned 32-bit number");
  }
  return it->get<uint32_t>();
}

Result<std::vector<Controller>> ReadProcess(const std::string& path, int timeout_ms) {
  auto client = ControlClient::Connect(path, timeout_ms);
  if (!client) return client.error();
  auto reply = client->Call({{"op", "list"}});
  if (!reply) return reply.error();

  const uint32_t pid = static_cast<uint32_t>(client->peer_pid());
  if (reply->contains("pid")) {
    auto reported = UnsignedField(*reply, "pid", path);
    if (!reported) return reported.error();
    if (*reported != pid) {
      return MakeError(ErrorCode::kPermissionDenied, path + ": refused: reports pid " + std::to_string(*reported) +
                                                         " but its socket is served by pid " + std::to_string(pid));
    }
  }
  const auto queues = reply->find("queues");
  if (queues == reply->end() || !queues->is_array()) {
    return MakeError(ErrorCode::kIo, path + ": \"queues\" missing or not an array");
  }
  std::map<uint32_t, Controller> by_ctrl;
  for (size_t i = 0; i < queues->size(); ++i) {
    const nlohmann::json& entry = (*queues)[i];
    const std::string where = path + ": queues[" + std::to_string(i) + "]";
    if (!entry.is_object()) return MakeError(ErrorCode::kIo, where + ": not an object");
    auto ctrl = UnsignedField(entry, "ctrl", where);
    if (!ctrl) return ctrl.error();
    auto qid = UnsignedField(entry, "qid", where);
    if (!qid) return qid.error();
    const auto mode_field = entry.find("mode");
    const std::optional<ReapMode> mode =
        mode_field != entry.end() && mode_field->is_string()
            ? ParseReapMode(mode_field->get<std::string>())
            : std::nullopt;
    if (!mode) return MakeError(ErrorCode::kIo, where + ": \"mode\" is not \"interrupt\" or \"poll\"");

    Controller& c = by_ctrl[*ctrl];
    if (c.name.empty()) {
      c.name = UvnvmeControllerName(static_cast<pid_t>(pid), *ctrl);
      c.source = Source::kUvnvme;
      c.instance = *ctrl;
      c.pid = static_cast<pid_t>(pid);
      c.socket_path = path;
      c.model = "uvnvme";
      c.transport = "uvnvme";
      c.state = "live";
    }
    Queue q;
    q.qid = *qid;
    q.key = QueueKey{Source::kUvnvme, *ctrl, *qid, pid};
    q.vector = Vector{0, *qid, VectorKind::kEventfd, "eventfd", {}, {}};
    q.mode = *mode;
    q.eligible = *qid != 0;
    q.reason = *qid != 0 ? Ineligibility::kNone : Ineligibility::kAdminQueue;
    q.reason_text = *qid != 0 ? "" : "admin queue";
    c.queues.push_back(std::move(q));
  }
  std::vector<Controller> controllers;
  for (auto& [ctrl, c] : by_ctrl) {
    std::sort(c.queues.begin(), c.queues.end(), [](const Queue& a, const Queue& b) { return a.qid < b.qid; });
    controllers.push_back(std::move(c));
  }
  return controllers;
}

// A directory the agent may read sockets from: a real directory (not a link to one) that not everyone may
// fill (world-writable only with the sticky bit, so nobody replaces another user's socket).
Status CheckSocketDirectory(const std::string& dir, const struct stat& st) {
  if (!S_ISDIR(st.st_mode)) {
    return MakeError(ErrorCode::kPermissionDenied, dir + ": refused: not a directory (a symlink?)");
  }
  if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
    return MakeError(ErrorCode::kPermissionDenied, dir + ": refused: writable by every user without the sticky bit");
  }
  return OkStatus();
}

}  // namespace

std::vector<Controller> DiscoverUvnvme(const DiscoveryOptions& options, std::vector<Skipped>* skipped) {
  std::vector<Controller> controllers;
  const std::string dir = JoinPath(options.runtime_dir, "uvnvme");
  struct stat st{};
  if (lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT && skipped) skipped->push_back(Skipped{dir, SysError("lstat", dir, errno)});
    return controllers;  // ENOENT: no uvnvme process has run here
  }
  if (Status usable = CheckSocketDirectory(dir, st); !usable) {
    if (skipped) skipped->push_back(Skipped{dir, usable.error()});
    return controllers;
  }
  auto entries = ListDir(dir);
  if (!entries) {
    if (skipped) skipped->push_back(Skipped{dir, entries.error()});
    return controllers;
  }
  size_t asked = 0;
  for (const auto& name : *entries) {
    if (name.size() <= kSocketSuffix.size() ||
        name.compare(name.size() - kSocketSuffix.size(), kSocketSuffix.size(), kSocketSuffix) != 0) {
      continue;
    }
    if (++asked > kMaxDriverSockets) {
      if (skipped) {
        skipped->push_back(Skipped{dir, MakeError(ErrorCode::kUnavailable,
                                                  dir + ": more than " + std::to_string(kMaxDriverSockets) +
                                                      " sockets; the rest (from " + name + " on) are not asked")});
      }
      break;
    }
    const std::string path = JoinPath(dir, name);
    auto found = ReadProcess(path, options.socket_timeout_ms);
    if (!found) {
      if (skipped) skipped->push_back(Skipped{path, found.error()});
      continue;
    }
    for (auto& c : *found) controllers.push_back(std::move(c));
  }
  return controllers;
}

}  // namespace nvmeadapt::discover
