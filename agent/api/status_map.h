// SPDX-License-Identifier: Apache-2.0
// The one place where the agent's error codes become gRPC status codes.
#pragma once

#include <grpcpp/support/status.h>

#include <string_view>

#include "common/result.h"

namespace nvmeadapt::api {

grpc::StatusCode ToGrpcCode(ErrorCode code);
grpc::Status ToGrpcStatus(const Error& error);
// "NOT_FOUND", "RESOURCE_EXHAUSTED", ...: the canonical names, for logs, metrics and the CLI.
std::string_view StatusCodeName(grpc::StatusCode code);

}  // namespace nvmeadapt::api
