// SPDX-License-Identifier: Apache-2.0
#include "agent/actuate/lever_error.h"

#include <cerrno>

namespace nvmeadapt::actuate {
namespace {

ErrorCode WithinLeverCodes(ErrorCode code) {
  switch (code) {
    case ErrorCode::kRefused:
    case ErrorCode::kUnsupported:
    case ErrorCode::kNotFound:
    case ErrorCode::kPermissionDenied:
    case ErrorCode::kIo:
    case ErrorCode::kUnavailable:
      return code;
    default:
      return ErrorCode::kIo;
  }
}

}  // namespace

ErrorCode LeverCodeForErrno(int err) {
  if (err == EINVAL || err == ERANGE) return ErrorCode::kRefused;
  if (err == ENOTTY || err == EOPNOTSUPP) return ErrorCode::kUnsupported;
  return WithinLeverCodes(SysError("", "", err).code);
}

Error LeverFailure(LeverKind lever, ErrorCode code, std::string object, std::string message) {
  Error error = MakeError(WithinLeverCodes(code), std::move(message));
  error.origin = std::string(LeverKindName(lever));
  error.object = std::move(object);
  error.retry = RetryClassOf(error.code);
  return error;
}

Error LeverFailure(LeverKind lever, std::string object, const Error& error) {
  Error failure = LeverFailure(lever, error.sys_errno != 0 ? LeverCodeForErrno(error.sys_errno) : error.code,
                               std::move(object), error.message);
  failure.sys_errno = error.sys_errno;
  return failure;
}

std::optional<LeverKind> LeverOf(const Error& error) {
  if (error.origin.empty()) return std::nullopt;
  return ParseLeverKind(error.origin);
}

}  // namespace nvmeadapt::actuate
