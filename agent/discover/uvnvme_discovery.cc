// uvnvme driver processes: every $runtime_dir/uvnvme/*.sock answers {"op": "list"} with its queues
// (docs/uvnvme-control.md). Queues are grouped into controllers "uvnvme:PID:CTRL".
#include <map>

#include "agent/discover/control_client.h"
#include "agent/discover/discovery.h"
#include "agent/discover/fs.h"

namespace nvmeadapt::discover {
namespace {

constexpr std::string_view kSocketSuffix = ".sock";

Result<uint32_t> UnsignedField(const nlohmann::json& object, const char* field, const std::string& where) {
  const auto it = object.find(field);
  if (it == object.end() || !it->is_number_unsigned() || it->get<uint64_t>() > UINT32_MAX) {
    return MakeError(ErrorCode::kIo, where + ": \"" + field + "\" missing or not an unsigned 32-bit number");
  }
  return it->get<uint32_t>();
}

Result<std::vector<Controller>> ReadProcess(const std::string& path, const std::string& file_name, int timeout_ms) {
  auto client = ControlClient::Connect(path, timeout_ms);
  if (!client) return client.error();
  auto reply = client->Call({{"op", "list"}});
  if (!reply) return reply.error();

  uint32_t pid = 0;
  if (auto reported = UnsignedField(*reply, "pid", path)) {
    pid = *reported;
  } else if (!ParseU32(file_name.substr(0, file_name.size() - kSocketSuffix.size()), &pid)) {
    return reported.error();
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
    const std::optional<engine::ReapMode> mode =
        mode_field != entry.end() && mode_field->is_string()
            ? engine::ParseReapMode(mode_field->get<std::string>())
            : std::nullopt;
    if (!mode) return MakeError(ErrorCode::kIo, where + ": \"mode\" is not \"interrupt\" or \"poll\"");

    Controller& c = by_ctrl[*ctrl];
    if (c.name.empty()) {
      c.name = UvnvmeControllerName(static_cast<pid_t>(pid), *ctrl);
      c.source = collect::Source::kUvnvme;
      c.instance = *ctrl;
      c.pid = static_cast<pid_t>(pid);
      c.socket_path = path;
      c.model = "uvnvme";
      c.transport = "uvnvme";
      c.state = "live";
    }
    Queue q;
    q.qid = *qid;
    q.key = collect::QueueKey{collect::Source::kUvnvme, *ctrl, *qid, pid};
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

}  // namespace

std::vector<Controller> DiscoverUvnvme(const DiscoveryOptions& options, std::vector<Skipped>* skipped) {
  std::vector<Controller> controllers;
  const std::string dir = JoinPath(options.runtime_dir, "uvnvme");
  if (!IsDirectory(dir)) return controllers;  // no uvnvme process has run here
  auto entries = ListDir(dir);
  if (!entries) {
    if (skipped) skipped->push_back(Skipped{dir, entries.error()});
    return controllers;
  }
  for (const auto& name : *entries) {
    if (name.size() <= kSocketSuffix.size() ||
        name.compare(name.size() - kSocketSuffix.size(), kSocketSuffix.size(), kSocketSuffix) != 0) {
      continue;
    }
    const std::string path = JoinPath(dir, name);
    auto found = ReadProcess(path, name, options.socket_timeout_ms);
    if (!found) {
      if (skipped) skipped->push_back(Skipped{path, found.error()});
      continue;
    }
    for (auto& c : *found) controllers.push_back(std::move(c));
  }
  return controllers;
}

}  // namespace nvmeadapt::discover
