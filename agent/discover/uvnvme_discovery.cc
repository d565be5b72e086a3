// SPDX-License-Identifier: Apache-2.0
// uvnvme driver processes: every $runtime_dir/uvnvme/*.sock answers {"op": "list"} with its queues
// (docs/uvnvme-control.md). Queues are grouped into controllers "uvnvme:PID:CTRL".
//
// The directory is shared by every user allowed to run a driver, so nothing in it is believed on its word:
// ControlClient refuses links, non-sockets and sockets not owned by their listener; the pid uprobes attach to
// is the listener's as the kernel reports it, and a process reporting another pid is refused. Nor is any
// driver believed on its count (issue #37): a queue listed twice is one queue, a process behind several
// sockets is one set of controllers, a driver's controllers and queues are capped, and sockets are asked in
// parallel under one deadline per scan. Nor on its file names (issue 45): the sockets asked per scan are capped,
// and running drivers' own PID.sock come first, so no other name in the directory pushes a driver out.
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "agent/discover/control_client.h"
#include "agent/discover/discovery.h"
#include "agent/discover/fs.h"
#include "agent/discover/reaper_threads.h"
#include "common/clock.h"
#include "common/log.h"

namespace nvmeadapt::discover {
namespace {

constexpr std::string_view kSocketSuffix = ".sock";
// Sockets asked per scan: a directory flooded with files costs a bounded time and a bounded skipped list.
// Live drivers' own sockets (DriverSocketName) are asked first: other names get only the room they leave.
constexpr size_t kMaxDriverSockets = 256;
// What one driver process may list: a listing (64 KiB at most) can name well over a thousand queues.
constexpr size_t kMaxControllersPerDriver = 16;
constexpr size_t kMaxQueuesPerController = 256;
// Sockets asked at once: a silent socket costs the scan its timeout, not the sum of every silent one's.
constexpr size_t kParallelAsks = 16;

Result<uint32_t> UnsignedField(const nlohmann::json& object, const char* field, const std::string& where) {
  const auto it = object.find(field);
  if (it == object.end() || !it->is_number_unsigned() || it->get<uint64_t>() > UINT32_MAX) {
    return MakeError(ErrorCode::kIo, where + ": \"" + field + "\" missing or not an unsigned 32-bit number");
  }
  return it->get<uint32_t>();
}

// What one socket's driver listed, deduplicated and within the limits.
struct DriverListing {
  pid_t pid = 0;
  std::vector<Controller> controllers;
  std::string note;  // duplicates and entries over the limits that were ignored, if any
};

Controller DriverController(uint32_t pid, uint32_t ctrl, const std::string& path) {
  Controller c;
  c.name = UvnvmeControllerName(static_cast<pid_t>(pid), ctrl);
  c.source = Source::kUvnvme;
  c.instance = ctrl;
  c.pid = static_cast<pid_t>(pid);
  c.socket_path = path;
  c.model = "uvnvme";
  c.transport = "uvnvme";
  c.state = "live";
  return c;
}

Queue DriverQueue(uint32_t pid, uint32_t ctrl, uint32_t qid, ReapMode mode) {
  Queue q;
  q.qid = qid;
  q.key = QueueKey{Source::kUvnvme, ctrl, qid, pid};
  q.vector = Vector{0, qid, VectorKind::kEventfd, "eventfd", {}, {}};
  q.mode = mode;
  q.eligible = qid != 0;
  q.reason = qid != 0 ? Ineligibility::kNone : Ineligibility::kAdminQueue;
  q.reason_text = qid != 0 ? "" : "admin queue";
  return q;
}

Result<DriverListing> ReadProcess(const std::string& path, int timeout_ms) {
  NA_ASSIGN_OR_RETURN(auto client, ControlClient::Connect(path, timeout_ms));
  NA_ASSIGN_OR_RETURN(auto reply, client.Call({{"op", "list"}}));

  const uint32_t pid = static_cast<uint32_t>(client.peer_pid());
  if (reply.contains("pid")) {
    NA_ASSIGN_OR_RETURN(auto reported, UnsignedField(reply, "pid", path));
    if (reported != pid) {
      return MakeError(ErrorCode::kPermissionDenied, path + ": refused: reports pid " + std::to_string(reported) +
                                                         " but its socket is served by pid " + std::to_string(pid));
    }
  }
  const auto queues = reply.find("queues");
  if (queues == reply.end() || !queues->is_array()) {
    return MakeError(ErrorCode::kIo, path + ": \"queues\" missing or not an array");
  }
  std::map<uint32_t, Controller> by_ctrl;
  std::set<std::pair<uint32_t, uint32_t>> listed;  // (ctrl, qid): a queue listed twice is one queue
  size_t duplicates = 0, over_limit = 0;
  for (size_t i = 0; i < queues->size(); ++i) {
    const nlohmann::json& entry = (*queues)[i];
    const std::string where = path + ": queues[" + std::to_string(i) + "]";
    if (!entry.is_object()) return MakeError(ErrorCode::kIo, where + ": not an object");
    NA_ASSIGN_OR_RETURN(auto ctrl, UnsignedField(entry, "ctrl", where));
    NA_ASSIGN_OR_RETURN(auto qid, UnsignedField(entry, "qid", where));
    const auto mode_field = entry.find("mode");
    const std::optional<ReapMode> mode =
        mode_field != entry.end() && mode_field->is_string()
            ? ParseReapMode(mode_field->get<std::string>())
            : std::nullopt;
    if (!mode) return MakeError(ErrorCode::kIo, where + ": \"mode\" is not \"interrupt\" or \"poll\"");

    if (!by_ctrl.contains(ctrl) && by_ctrl.size() >= kMaxControllersPerDriver) {
      ++over_limit;
      continue;
    }
    Controller& c = by_ctrl[ctrl];
    if (!listed.insert({ctrl, qid}).second) {
      ++duplicates;
      continue;
    }
    if (c.queues.size() >= kMaxQueuesPerController) {
      ++over_limit;
      continue;
    }
    if (c.name.empty()) c = DriverController(pid, ctrl, path);
    c.queues.push_back(DriverQueue(pid, ctrl, qid, *mode));
  }
  DriverListing listing;
  listing.pid = static_cast<pid_t>(pid);
  for (auto& [ctrl, c] : by_ctrl) {
    std::sort(c.queues.begin(), c.queues.end(), [](const Queue& a, const Queue& b) { return a.qid < b.qid; });
    listing.controllers.push_back(std::move(c));
  }
  // Said once per scan as a skip of the socket, in words that stay the same from scan to scan (logged once).
  if (duplicates > 0 || over_limit > 0) {
    listing.note = path + ": " + std::to_string(duplicates) + " queue entr" + (duplicates == 1 ? "y" : "ies") +
                   " listed again ignored, " + std::to_string(over_limit) + " over the limits of " +
                   std::to_string(kMaxControllersPerDriver) + " controllers and " +
                   std::to_string(kMaxQueuesPerController) + " queues per controller ignored";
  }
  return listing;
}

// "PID.sock" of a running process, a socket file owned by that process's user: what a driver names its socket
// (docs/uvnvme-control.md). Anyone in the directory's group can make other names, and name a file after a pid
// of another user's; neither may push a driver out of the sockets a scan asks (issue 45).
bool DriverSocketName(const DiscoveryOptions& options, const std::string& dir, const std::string& name) {
  const std::string_view digits = std::string_view(name).substr(0, name.size() - kSocketSuffix.size());
  if (digits.empty() || digits.size() > 10 || digits.find_first_not_of("0123456789") != std::string_view::npos ||
      digits[0] == '0') {
    return false;
  }
  struct stat file{}, process{};
  if (lstat(JoinPath(dir, name).c_str(), &file) != 0 || !S_ISSOCK(file.st_mode)) return false;
  if (stat(JoinPath(options.procfs_root, std::string(digits)).c_str(), &process) != 0) return false;
  return process.st_uid == file.st_uid;
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

// Asks every socket, kParallelAsks at a time, under one deadline for the whole scan: twice the timeout of
// one socket. A socket not asked by then is skipped and said so; one asked gets what is left of the deadline.
std::vector<Result<DriverListing>> AskAll(const std::vector<std::string>& paths, int timeout_ms) {
  std::vector<Result<DriverListing>> answers(paths.size(), Result<DriverListing>(Error{}));
  const int64_t deadline = MonotonicNanos() + 2 * int64_t{timeout_ms} * 1'000'000;
  std::atomic<size_t> next{0};
  auto ask = [&] {
    for (size_t i = next++; i < paths.size(); i = next++) {
      const int64_t left_ms = (deadline - MonotonicNanos()) / 1'000'000;
      if (left_ms <= 0) {
        answers[i] = MakeError(ErrorCode::kUnavailable, paths[i] + ": not asked: the scan's deadline (" +
                                                            std::to_string(2 * timeout_ms) + " ms) passed");
        continue;
      }
      answers[i] = ReadProcess(paths[i], static_cast<int>(std::min<int64_t>(left_ms, timeout_ms)));
    }
  };
  std::vector<std::thread> askers;
  for (size_t n = 1; n < std::min(paths.size(), kParallelAsks); ++n) askers.emplace_back(ask);
  ask();
  for (std::thread& asker : askers) asker.join();
  return answers;
}

// The sockets a scan asks, at most kMaxDriverSockets: running drivers' own PID.sock first, in name order, then
// the other names while the cap leaves room. What is left out is said in `skipped`, each kind once.
std::vector<std::string> SocketsToAsk(const DiscoveryOptions& options, const std::string& dir,
                                      const std::vector<std::string>& names, std::vector<Skipped>* skipped) {
  std::vector<std::string> paths, others;
  size_t not_utf8 = 0;
  std::string first_not_utf8;
  for (const auto& name : names) {
    if (name.size() <= kSocketSuffix.size() ||
        name.compare(name.size() - kSocketSuffix.size(), kSocketSuffix.size(), kSocketSuffix) != 0) {
      continue;
    }
    if (!IsUtf8(name)) {  // its path would go into journal entries (JSON) and the API (protobuf strings)
      if (not_utf8++ == 0) first_not_utf8 = EscapeControlCharacters(name);
      continue;
    }
    (DriverSocketName(options, dir, name) ? paths : others).push_back(name);
  }
  const std::string first_unasked = paths.size() > kMaxDriverSockets ? paths[kMaxDriverSockets] : "";
  paths.resize(std::min(paths.size(), kMaxDriverSockets));
  const size_t room = kMaxDriverSockets - paths.size();
  paths.insert(paths.end(), others.begin(), others.begin() + std::min(room, others.size()));
  for (std::string& name : paths) name = JoinPath(dir, name);
  if (skipped == nullptr) return paths;
  if (!first_unasked.empty()) {
    skipped->push_back(Skipped{dir, MakeError(ErrorCode::kUnavailable,
                                              dir + ": more than " + std::to_string(kMaxDriverSockets) +
                                                  " drivers' sockets; the rest (from " + first_unasked +
                                                  " on) are not asked")});
  }
  if (not_utf8 > 0) {
    skipped->push_back(Skipped{JoinPath(dir, "*.sock (not UTF-8)"),
                               MakeError(ErrorCode::kInvalidArgument,
                                         dir + ": " + std::to_string(not_utf8) + " *.sock name(s) refused (from " +
                                             first_not_utf8 + "): not UTF-8, which journal entries and the API "
                                             "carry only")});
  }
  if (others.size() > room) {
    // Said in words that stay the same while the directory does: logged once, not at every scan.
    skipped->push_back(Skipped{JoinPath(dir, "*.sock"),
                               MakeError(ErrorCode::kUnavailable,
                                         dir + ": " + std::to_string(others.size()) +
                                             " *.sock names that are no running driver's PID.sock; those past the " +
                                             std::to_string(kMaxDriverSockets) + " sockets asked per scan are not "
                                             "asked")});
  }
  return paths;
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
  const std::vector<std::string> paths = SocketsToAsk(options, dir, *entries, skipped);
  std::vector<Result<DriverListing>> answers = AskAll(paths, options.socket_timeout_ms);
  // One controller set per process, whatever number of sockets lead to it: the first socket's (in name order).
  std::map<pid_t, std::string> answered;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (!answers[i]) {
      if (skipped) skipped->push_back(Skipped{paths[i], answers[i].error()});
      continue;
    }
    DriverListing& listing = *answers[i];
    const auto [first, fresh] = answered.try_emplace(listing.pid, paths[i]);
    if (!fresh) {
      if (skipped) {
        skipped->push_back(Skipped{paths[i], MakeError(ErrorCode::kFailedPrecondition,
                                                       paths[i] + ": ignored: pid " + std::to_string(listing.pid) +
                                                           " answered on " + first->second + " already")});
      }
      continue;
    }
    if (!listing.note.empty() && skipped) {
      skipped->push_back(Skipped{paths[i], MakeError(ErrorCode::kInvalidArgument, listing.note)});
    }
    // The reaper threads' CPUs: each queue's reaping CPU for the node layer (an unreadable task list, a driver
    // that names its threads otherwise: no CPUs, and the node layer's CPU rules skip those queues).
    if (auto reapers = ReaperCpus(options.procfs_root, listing.pid)) {
      for (Controller& c : listing.controllers) {
        for (Queue& q : c.queues) {
          if (auto it = reapers->find({c.instance, q.qid}); it != reapers->end()) q.cpus = it->second;
        }
      }
    }
    for (auto& c : listing.controllers) controllers.push_back(std::move(c));
  }
  return controllers;
}

}  // namespace nvmeadapt::discover
