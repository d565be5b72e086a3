// SPDX-License-Identifier: Apache-2.0
#include "agent/actuate/file_lever.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "agent/discover/fs.h"

namespace nvmeadapt::actuate {
namespace {

std::string Parent(const std::string& path) { return std::filesystem::path(path).parent_path().string(); }

void ReplaceAll(std::string& text, std::string_view from, const std::string& to) {
  for (size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size())) {
    text.replace(pos, from.size(), to);
  }
}

}  // namespace

std::string ExpandPathTemplate(const std::string& path_template, const std::string& sysfs_root,
                               const std::string& controller) {
  std::string path = path_template;
  ReplaceAll(path, "{sysfs}", sysfs_root);
  ReplaceAll(path, "{ctrl}", controller);
  return path;
}

Result<std::string> FileLever::ReadValue(const std::string& path, const std::string& missing_what) const {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err != ENOENT) return Fail(path, SysError("stat", path, err));
    const std::string parent = Parent(path);
    if (!discover::IsDirectory(parent)) return Fail(ErrorCode::kNotFound, path, parent + ": not found");
    Error error = Fail(ErrorCode::kUnsupported, path, path + ": " + missing_what);
    error.sys_errno = err;
    return error;
  }
  auto value = discover::ReadTrimmed(path);
  if (!value) return Fail(path, value.error());
  return *value;
}

PlannedLever::Step FileLever::WriteStep(const std::string& path, const std::string& value) const {
  return Step{path, value, [this, path, value]() -> Status {
                if (Status written = WriteAttribute(root_, path, value); !written) return Fail(path, written.error());
                return {};
              }};
}

Result<std::vector<PlannedLever::Step>> FileLever::RestoreFiles(const RestorePoint& point,
                                                                     const std::vector<std::string>& allowed) const {
  std::vector<Step> steps;
  for (const RestoreStep& step : point.steps) {
    if (std::find(allowed.begin(), allowed.end(), step.object) == allowed.end()) {
      return Fail(ErrorCode::kIo, step.object,
                  "restore point names " + step.object + ", not a file of this lever for " + point.target.ToString());
    }
    steps.push_back(WriteStep(step.object, step.value));
  }
  return steps;
}

}  // namespace nvmeadapt::actuate
