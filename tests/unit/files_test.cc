// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/files.h"

namespace nvmeadapt {
namespace {

std::string FreshDir(const char* name) {
  std::string dir = ::testing::TempDir() + "/files_test_" + name + "_" + std::to_string(getpid());
  std::string cmd = "rm -rf '" + dir + "'";
  EXPECT_EQ(system(cmd.c_str()), 0);
  return dir;
}

TEST(Files, AtomicWriteReplacesWholeAndLeavesNoTemporary) {
  const std::string dir = FreshDir("atomic");
  ASSERT_TRUE(MakeDirectories(dir + "/a/b"));
  const std::string path = dir + "/a/b/state.json";
  ASSERT_TRUE(WriteFileAtomically(path, "first", 0600));
  ASSERT_TRUE(WriteFileAtomically(path, "second, longer", 0600));
  auto text = ReadWholeFile(path);
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, "second, longer");
  struct stat st{};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_NE(access((path + ".tmp." + std::to_string(getpid())).c_str(), F_OK), 0);
}

TEST(Files, ErrorsNameThePath) {
  auto missing = ReadWholeFile("/nonexistent/x");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message.find("/nonexistent/x"), std::string::npos);
  Status write = WriteFileAtomically("/nonexistent/dir/x", "y");
  ASSERT_FALSE(write);
  EXPECT_NE(write.error().message.find("/nonexistent/dir/x"), std::string::npos);
}

TEST(Files, MakeDirectoriesRefusesAFileInTheWay) {
  const std::string dir = FreshDir("notdir");
  ASSERT_TRUE(MakeDirectories(dir));
  ASSERT_TRUE(WriteFileAtomically(dir + "/file", "x"));
  Status status = MakeDirectories(dir + "/file/sub");
  ASSERT_FALSE(status);
  EXPECT_NE(status.error().message.find(dir + "/file"), std::string::npos);
}

TEST(Files, ReadRefusesOversizeFiles) {
  const std::string dir = FreshDir("big");
  ASSERT_TRUE(MakeDirectories(dir));
  ASSERT_TRUE(WriteFileAtomically(dir + "/big", std::string(100, 'x')));
  auto text = ReadWholeFile(dir + "/big", 10);
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().code, ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace nvmeadapt
