// SPDX-License-Identifier: Apache-2.0
// Typed results across module boundaries: a value or an Error with a code and a message that names the
// object concerned. Exceptions stay at the edges (main, gRPC handlers). NA_RETURN_IF_ERROR and
// NA_ASSIGN_OR_RETURN (below) hand an error on to the caller.
#pragma once

#include <cassert>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "common/enum_table.h"

namespace nvmeadapt {

enum class ErrorCode {
  kInvalidArgument,     // the caller's input is wrong; the message names the field
  kNotFound,            // a queue, controller, file or process that is not (or no longer) there
  kPermissionDenied,    // missing capability or file permission
  kUnavailable,         // transient: retry may succeed
  kFailedPrecondition,  // valid request, wrong state (e.g. override of an ineligible queue)
  kUnsupported,         // this kernel, device or driver lacks the feature
  kRefused,             // a device or driver said no (e.g. NVMe "Feature Not Changeable")
  kIo,                  // a syscall failed for another reason
  kInternal,            // a bug
};

// Each code's word (logs, the metrics' code label) and, as its API number, the gRPC status code the API
// answers it with (agent/api/status_map.cc holds the numbers to grpc::StatusCode at compile time).
inline constexpr EnumTable<ErrorCode, 9> kErrorCodes({{ErrorCode::kInvalidArgument, "invalid_argument", 3},
                                                      {ErrorCode::kNotFound, "not_found", 5},
                                                      {ErrorCode::kPermissionDenied, "permission_denied", 7},
                                                      {ErrorCode::kUnavailable, "unavailable", 14},
                                                      {ErrorCode::kFailedPrecondition, "failed_precondition", 9},
                                                      // what gRPC defines UNIMPLEMENTED as: not supported here
                                                      {ErrorCode::kUnsupported, "unsupported", 12},
                                                      // a valid request the system's state does not allow
                                                      {ErrorCode::kRefused, "refused", 9},
                                                      {ErrorCode::kIo, "io", 13},
                                                      {ErrorCode::kInternal, "internal", 13}},
                                                     "internal");
constexpr std::string_view ErrorCodeName(ErrorCode code) { return kErrorCodes.Name(code); }

// Whether trying again may succeed by itself.
enum class RetryClass : uint8_t {
  kTransient,  // unavailable, I/O, a bug: a retry with backoff may succeed
  kPermanent,  // a refusal, a missing feature, object or permission: it will not change by itself
};
RetryClass RetryClassOf(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  int sys_errno = 0;  // the errno behind it, when a syscall failed
  // Set by the module that failed when it says more than the message (the levers: agent/actuate/lever_error.h).
  std::string origin;         // who failed, e.g. the lever's name
  std::string object;         // the path, device, IRQ or socket concerned
  uint16_t nvme_status = 0;   // when an NVMe controller completed a command with an error (actuate/nvme_admin.h)
  std::optional<RetryClass> retry;  // as the failing module classed it; else by the code (Retry())

  RetryClass Retry() const { return retry ? *retry : RetryClassOf(code); }
  // The message; with an origin "<origin>: <code>: <message>" ("coalescing: refused: /dev/nvme0 Set ...").
  std::string ToString() const;
  // For callers that read only `message`: the same error with ToString() as its message, origin cleared.
  Error Flattened() const;
};

Error MakeError(ErrorCode code, std::string message);
// "what path: strerror(err)", with the code derived from errno (ENOENT -> kNotFound, EACCES -> ...).
Error SysError(std::string_view what, std::string_view object, int err);

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { assert(ok()); return std::get<0>(state_); }
  const T& value() const& { assert(ok()); return std::get<0>(state_); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { assert(!ok()); return std::get<1>(state_); }
  Error&& take_error() && { assert(!ok()); return std::get<1>(std::move(state_)); }

 private:
  std::variant<T, Error> state_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const { assert(!ok()); return *error_; }
  Error&& take_error() && { assert(!ok()); return std::move(*error_); }

 private:
  std::optional<Error> error_;
};

using Status = Result<void>;
inline Status OkStatus() { return {}; }

// Returns the error of `expr` (a Result or Status) from the enclosing function, which returns a Result or
// Status too.
#define NA_RETURN_IF_ERROR(expr)                                            \
  do {                                                                      \
    auto&& na_status_ = (expr);                                             \
    if (!na_status_) return std::move(na_status_).take_error();             \
  } while (0)

// `NA_ASSIGN_OR_RETURN(auto value, expr);`: the value of the Result `expr`, moved into the declaration or
// variable `lhs`, or its error returned from the enclosing function.
#define NA_ASSIGN_OR_RETURN(lhs, expr) NA_ASSIGN_OR_RETURN_IMPL_(NA_RESULT_CONCAT_(na_result_, __LINE__), lhs, expr)
#define NA_ASSIGN_OR_RETURN_IMPL_(result, lhs, expr) \
  auto result = (expr);                              \
  if (!result) return std::move(result).take_error(); \
  lhs = std::move(result).value()
#define NA_RESULT_CONCAT_(a, b) NA_RESULT_CONCAT_INNER_(a, b)
#define NA_RESULT_CONCAT_INNER_(a, b) a##b

}  // namespace nvmeadapt
