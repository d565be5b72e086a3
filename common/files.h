// SPDX-License-Identifier: Apache-2.0
// Whole-file reads and crash-safe writes. A write is atomic: readers see the old contents or the new,
// never a torn file, and after it returns the new contents survive a crash (write, fsync, rename, fsync dir).
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "common/result.h"

namespace nvmeadapt {

// Reads a whole file; refuses files larger than max_bytes.
Result<std::string> ReadWholeFile(const std::string& path, size_t max_bytes = 16 << 20);

Status WriteFileAtomically(const std::string& path, std::string_view contents, mode_t mode = 0640);

// Opens `path`, which must name a file under `root` without "." or ".." components, resolving it inside
// root: a symlink on the way may lead elsewhere under root (sysfs's class links do) but never out of it, and
// the file itself is never a followed link. `flags` are open(2) flags. Refusals are kPermissionDenied and say
// why; other errors are SysError with the path.
Result<int> OpenBeneath(const std::string& root, const std::string& path, int flags);

// mkdir -p with `mode` for the directories it creates.
Status MakeDirectories(const std::string& path, mode_t mode = 0750);

}  // namespace nvmeadapt
