// SPDX-License-Identifier: Apache-2.0
#include "agent/api/status_map.h"

#include "common/grpc_code_names.h"

namespace nvmeadapt::api {

grpc::StatusCode ToGrpcCode(ErrorCode code) { return static_cast<grpc::StatusCode>(kErrorCodes.Proto(code)); }

// The error codes' API numbers are gRPC's.
static_assert(kErrorCodes.Proto(ErrorCode::kInvalidArgument) == grpc::StatusCode::INVALID_ARGUMENT);
static_assert(kErrorCodes.Proto(ErrorCode::kNotFound) == grpc::StatusCode::NOT_FOUND);
static_assert(kErrorCodes.Proto(ErrorCode::kPermissionDenied) == grpc::StatusCode::PERMISSION_DENIED);
static_assert(kErrorCodes.Proto(ErrorCode::kUnavailable) == grpc::StatusCode::UNAVAILABLE);
static_assert(kErrorCodes.Proto(ErrorCode::kFailedPrecondition) == grpc::StatusCode::FAILED_PRECONDITION);
static_assert(kErrorCodes.Proto(ErrorCode::kUnsupported) == grpc::StatusCode::UNIMPLEMENTED);
static_assert(kErrorCodes.Proto(ErrorCode::kRefused) == grpc::StatusCode::FAILED_PRECONDITION);
static_assert(kErrorCodes.Proto(ErrorCode::kIo) == grpc::StatusCode::INTERNAL);
static_assert(kErrorCodes.Proto(ErrorCode::kInternal) == grpc::StatusCode::INTERNAL);

grpc::Status ToGrpcStatus(const Error& error) { return grpc::Status(ToGrpcCode(error.code), error.message); }

// The table is indexed by gRPC's numbering: these hold it to grpc::StatusCode's.
static_assert(GrpcCodeName(grpc::StatusCode::OK) == "OK");
static_assert(GrpcCodeName(grpc::StatusCode::NOT_FOUND) == "NOT_FOUND");
static_assert(GrpcCodeName(grpc::StatusCode::FAILED_PRECONDITION) == "FAILED_PRECONDITION");
static_assert(GrpcCodeName(grpc::StatusCode::UNAVAILABLE) == "UNAVAILABLE");
static_assert(GrpcCodeName(grpc::StatusCode::UNAUTHENTICATED) == "UNAUTHENTICATED");

std::string_view StatusCodeName(grpc::StatusCode code) { return GrpcCodeName(static_cast<int>(code)); }

}  // namespace nvmeadapt::api
