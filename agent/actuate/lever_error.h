// SPDX-License-Identifier: Apache-2.0
// How levers fail: the common Error (common/result.h) with the lever's name as its origin, the object
// concerned, and a code among kRefused (the device, kernel or driver said no: NVMe "Feature Not Changeable",
// EINVAL from a sysfs store, {"ok": false} from a driver), kUnsupported (this machine lacks the lever: no
// attribute, no GSIM, no vector), kNotFound (the controller, IRQ, device or process is gone),
// kPermissionDenied, kIo (anything else, garbage answers included) or kUnavailable (transient: timeout, busy).
// Its retry class follows the code (RetryClassOf). ToString() reads "coalescing: refused: /dev/nvme0 ...".
#pragma once

#include <optional>
#include <string>

#include "common/result.h"
#include "common/vocabulary.h"

namespace nvmeadapt::actuate {

// A failure of `lever` concerning `object`; `code` is kept within the lever codes (anything else is kIo).
Error LeverFailure(LeverKind lever, ErrorCode code, std::string object, std::string message);
// An Error from common/ (SysError, a parser, the control client) as the lever's: the code comes from its
// errno when it has one (LeverCodeForErrno), else is kept within the lever codes.
Error LeverFailure(LeverKind lever, std::string object, const Error& error);

// The lever an error came from; nullopt for an error no lever made.
std::optional<LeverKind> LeverOf(const Error& error);

// The lever code for an errno: EINVAL and ERANGE from a kernel store are kRefused, ENOTTY kUnsupported, the
// rest as SysError maps them, kept within the lever codes (anything else is kIo).
ErrorCode LeverCodeForErrno(int err);

}  // namespace nvmeadapt::actuate
