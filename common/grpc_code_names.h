// SPDX-License-Identifier: Apache-2.0
// The canonical names of gRPC's status codes, by number (grpc::StatusCode; doc/statuscodes.md of gRPC). One
// table for the API's logs and request records (agent/api/status_map.cc, which checks the numbering against
// grpc::StatusCode at compile time) and the metrics' code label, which needs no gRPC header.
#pragma once

#include <array>
#include <string_view>

namespace nvmeadapt {

inline constexpr std::array<std::string_view, 17> kGrpcCodeNames = {
    "OK",        "CANCELLED",         "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS",    "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",      "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

// Codes outside the table are "UNKNOWN".
constexpr std::string_view GrpcCodeName(int code) {
  if (code < 0 || static_cast<size_t>(code) >= kGrpcCodeNames.size()) return "UNKNOWN";
  return kGrpcCodeNames[static_cast<size_t>(code)];
}

}  // namespace nvmeadapt
