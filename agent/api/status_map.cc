#include "agent/api/status_map.h"

#include "common/grpc_code_names.h"

namespace nvmeadapt::api {

grpc::StatusCode ToGrpcCode(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return grpc::StatusCode::INVALID_ARGUMENT;
    case ErrorCode::kNotFound: return grpc::StatusCode::NOT_FOUND;
    case ErrorCode::kPermissionDenied: return grpc::StatusCode::PERMISSION_DENIED;
    case ErrorCode::kUnavailable: return grpc::StatusCode::UNAVAILABLE;
    case ErrorCode::kFailedPrecondition: return grpc::StatusCode::FAILED_PRECONDITION;
    // "not supported/enabled in this service" is what gRPC defines UNIMPLEMENTED as.
    case ErrorCode::kUnsupported: return grpc::StatusCode::UNIMPLEMENTED;
    // A device or driver refused a valid request: the system is not in a state that allows it.
    case ErrorCode::kRefused: return grpc::StatusCode::FAILED_PRECONDITION;
    case ErrorCode::kIo: return grpc::StatusCode::INTERNAL;
    case ErrorCode::kInternal: return grpc::StatusCode::INTERNAL;
  }
  return grpc::StatusCode::INTERNAL;
}

grpc::Status ToGrpcStatus(const Error& error) { return grpc::Status(ToGrpcCode(error.code), error.message); }

// The table is indexed by gRPC's numbering: these hold it to grpc::StatusCode's.
static_assert(GrpcCodeName(grpc::StatusCode::OK) == "OK");
static_assert(GrpcCodeName(grpc::StatusCode::NOT_FOUND) == "NOT_FOUND");
static_assert(GrpcCodeName(grpc::StatusCode::FAILED_PRECONDITION) == "FAILED_PRECONDITION");
static_assert(GrpcCodeName(grpc::StatusCode::UNAVAILABLE) == "UNAVAILABLE");
static_assert(GrpcCodeName(grpc::StatusCode::UNAUTHENTICATED) == "UNAUTHENTICATED");

std::string_view StatusCodeName(grpc::StatusCode code) { return GrpcCodeName(static_cast<int>(code)); }

}  // namespace nvmeadapt::api
