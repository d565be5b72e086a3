// SPDX-License-Identifier: Apache-2.0
// common/result.h: the propagation macros, the retry class and the flattened message.
#include "common/result.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <memory>
#include <string>

namespace nvmeadapt {
namespace {

Result<int> Parse(const std::string& text) {
  if (text.empty()) return MakeError(ErrorCode::kInvalidArgument, "empty");
  return std::stoi(text);
}

Status Check(const std::string& text, int* seen) {
  NA_ASSIGN_OR_RETURN(*seen, Parse(text));
  return OkStatus();
}

Result<std::string> Twice(const std::string& text) {
  int seen = 0;
  NA_RETURN_IF_ERROR(Check(text, &seen));
  NA_ASSIGN_OR_RETURN(const int again, Parse(text));
  NA_ASSIGN_OR_RETURN(auto owned, Result<std::unique_ptr<int>>(std::make_unique<int>(seen + again)));
  return std::to_string(*owned);
}

TEST(ResultMacros, AValueIsMovedOnAndAnErrorReturnedUnchanged) {
  auto ok = Twice("21");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(*ok, "42");
  auto bad = Twice("");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().message, "empty");
}

TEST(ResultRetry, TheClassFollowsTheCodeUnlessTheFailingModuleSaidOtherwise) {
  EXPECT_EQ(MakeError(ErrorCode::kUnavailable, "busy").Retry(), RetryClass::kTransient);
  EXPECT_EQ(MakeError(ErrorCode::kIo, "eio").Retry(), RetryClass::kTransient);
  EXPECT_EQ(MakeError(ErrorCode::kRefused, "no").Retry(), RetryClass::kPermanent);
  EXPECT_EQ(SysError("open", "/dev/nvme0", EACCES).Retry(), RetryClass::kPermanent);
  Error classed = MakeError(ErrorCode::kIo, "garbage");
  classed.retry = RetryClass::kPermanent;
  EXPECT_EQ(classed.Retry(), RetryClass::kPermanent);
}

TEST(ResultFlattened, AnOriginAndItsCodeMoveIntoTheMessage) {
  Error plain = MakeError(ErrorCode::kNotFound, "nvme7: gone");
  EXPECT_EQ(plain.ToString(), "nvme7: gone");
  EXPECT_EQ(plain.Flattened().message, "nvme7: gone");
  Error lever = MakeError(ErrorCode::kRefused, "/dev/nvme0 Set Features 08h: Feature Not Changeable");
  lever.origin = "coalescing";
  lever.object = "/dev/nvme0";
  lever.sys_errno = EINVAL;
  EXPECT_EQ(lever.ToString(), "coalescing: refused: /dev/nvme0 Set Features 08h: Feature Not Changeable");
  const Error flat = lever.Flattened();
  EXPECT_EQ(flat.message, lever.ToString());
  EXPECT_EQ(flat.ToString(), lever.ToString()) << "flattened once, never prefixed twice";
  EXPECT_EQ(flat.code, ErrorCode::kRefused);
  EXPECT_EQ(flat.sys_errno, EINVAL);
  EXPECT_EQ(flat.object, "/dev/nvme0");
}

}  // namespace
}  // namespace nvmeadapt
