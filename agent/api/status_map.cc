#include "agent/api/status_map.h"

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

std::string_view StatusCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: break;
  }
  return "UNKNOWN";
}

}  // namespace nvmeadapt::api
