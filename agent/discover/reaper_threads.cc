// SPDX-License-Identifier: Apache-2.0
#include "agent/discover/reaper_threads.h"

#include <dirent.h>

#include <cerrno>
#include <charconv>
#include <string_view>

#include "agent/discover/procfs_parse.h"
#include "common/files.h"

namespace nvmeadapt::discover {
namespace {

constexpr size_t kCommBytes = 64;
constexpr size_t kStatusBytes = 16 * 1024;

std::string Comm(const std::string& task) {
  auto comm = ReadWholeFile(task + "/comm", kCommBytes);
  return comm ? comm->substr(0, comm->find('\n')) : "";
}

// Every task directory of the process.
Result<std::vector<std::string>> Tasks(const std::string& proc_root, pid_t pid) {
  const std::string tasks = proc_root + "/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(tasks.c_str());
  if (dir == nullptr) return SysError("opendir", tasks, errno);
  std::vector<std::string> out;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') out.push_back(tasks + "/" + entry->d_name);
  }
  closedir(dir);
  return out;
}

// "uvnvme-c0q1" -> (0, 1); false for any other name (or one cut short by the 15 characters).
bool ParseReaperName(std::string_view comm, uint32_t* ctrl, uint32_t* qid) {
  constexpr std::string_view kPrefix = "uvnvme-c";
  if (!comm.starts_with(kPrefix)) return false;
  const std::string_view name = comm.substr(kPrefix.size());
  const size_t q = name.find('q');
  if (q == std::string_view::npos) return false;
  const auto [c_end, c_ec] = std::from_chars(name.data(), name.data() + q, *ctrl);
  const auto [q_end, q_ec] = std::from_chars(name.data() + q + 1, name.data() + name.size(), *qid);
  return c_ec == std::errc() && c_end == name.data() + q && q_ec == std::errc() &&
         q_end == name.data() + name.size() && q + 1 < name.size() && ReaperThreadName(*ctrl, *qid) == comm;
}

}  // namespace

std::string ReaperThreadName(uint32_t ctrl, uint32_t qid) {
  return ("uvnvme-c" + std::to_string(ctrl) + "q" + std::to_string(qid)).substr(0, 15);
}

Result<std::string> FindThread(const std::string& proc_root, pid_t pid, const std::string& name) {
  NA_ASSIGN_OR_RETURN(std::vector<std::string> tasks, Tasks(proc_root, pid));
  for (const std::string& task : tasks) {
    if (Comm(task) == name) return task;
  }
  return MakeError(ErrorCode::kNotFound,
                   proc_root + "/" + std::to_string(pid) + "/task: no reaper thread named " + name);
}

Result<std::map<std::pair<uint32_t, uint32_t>, std::vector<uint32_t>>> ReaperCpus(const std::string& proc_root,
                                                                                  pid_t pid) {
  NA_ASSIGN_OR_RETURN(std::vector<std::string> tasks, Tasks(proc_root, pid));
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint32_t>> out;
  for (const std::string& task : tasks) {
    uint32_t ctrl = 0, qid = 0;
    if (!ParseReaperName(Comm(task), &ctrl, &qid)) continue;
    auto status = ReadWholeFile(task + "/status", kStatusBytes);
    if (!status) continue;  // the thread ended meanwhile
    constexpr std::string_view kKey = "Cpus_allowed_list:";
    const size_t at = status->find(kKey);
    if (at == std::string::npos) continue;
    const size_t end = status->find('\n', at);
    auto cpus = ParseCpuList(std::string_view(*status).substr(at + kKey.size(), end - at - kKey.size()));
    if (cpus) out[{ctrl, qid}] = std::move(*cpus);
  }
  return out;
}

}  // namespace nvmeadapt::discover
