// SPDX-License-Identifier: Apache-2.0
#include "common/result.h"

#include <cerrno>
#include <cstring>

namespace nvmeadapt {

RetryClass RetryClassOf(ErrorCode code) {
  return code == ErrorCode::kUnavailable || code == ErrorCode::kIo || code == ErrorCode::kInternal
             ? RetryClass::kTransient
             : RetryClass::kPermanent;
}

std::string Error::ToString() const {
  if (origin.empty()) return message;
  return origin + ": " + std::string(ErrorCodeName(code)) + ": " + message;
}

Error Error::Flattened() const {
  Error flat = *this;
  flat.message = ToString();
  flat.origin.clear();
  return flat;
}

Error MakeError(ErrorCode code, std::string message) {
  Error error;
  error.code = code;
  error.message = std::move(message);
  return error;
}

Error SysError(std::string_view what, std::string_view object, int err) {
  ErrorCode code = ErrorCode::kIo;
  switch (err) {
    case ENOENT: case ENODEV: case ENXIO: case ESRCH: code = ErrorCode::kNotFound; break;
    case EACCES: case EPERM: code = ErrorCode::kPermissionDenied; break;
    case EAGAIN: case EBUSY: case EINTR: case ETIMEDOUT: case ECONNREFUSED: code = ErrorCode::kUnavailable; break;
    case EINVAL: code = ErrorCode::kInvalidArgument; break;
    case ENOTSUP: case ENOSYS: code = ErrorCode::kUnsupported; break;
    default: break;
  }
  std::string message(what);
  if (!object.empty()) {
    message += ' ';
    message += object;
  }
  message += ": ";
  message += std::strerror(err);
  Error error = MakeError(code, std::move(message));
  error.sys_errno = err;
  return error;
}

}  // namespace nvmeadapt
