// Typed results across module boundaries: a value or an Error with a code and a message that names the
// object concerned. Exceptions stay at the edges (main, gRPC handlers).
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

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

std::string_view ErrorCodeName(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  int sys_errno = 0;  // the errno behind it, when a syscall failed

  std::string ToString() const;
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

}  // namespace nvmeadapt
