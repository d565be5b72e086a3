// What ReadBinaryHooks finds in real ELF files built for the test (tests/unit/elf_hooks_fixture.cc), and
// how it refuses what it cannot read.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "agent/collect/elf_hooks.h"

namespace nvmeadapt::collect {
namespace {

BinaryHooks Read(const char* path) {
  auto hooks = ReadBinaryHooks(path);
  EXPECT_TRUE(hooks) << path << ": " << hooks.error().message;
  return hooks ? *hooks : BinaryHooks{};
}

TEST(ElfHooks, ADriverWithTheTallyProbeOffersBoth) {
  const BinaryHooks hooks = Read(ELF_FIXTURE_UVNVME);
  EXPECT_TRUE(hooks.uvnvme_usdt);
  EXPECT_TRUE(hooks.uvnvme_tally);
  EXPECT_FALSE(hooks.spdk_symbol);
}

TEST(ElfHooks, AnOlderDriverOffersOnlyItsCompleteProbe) {
  const BinaryHooks hooks = Read(ELF_FIXTURE_UVNVME_COMPLETE_ONLY);
  EXPECT_TRUE(hooks.uvnvme_usdt);
  EXPECT_FALSE(hooks.uvnvme_tally);
}

TEST(ElfHooks, AnotherProviderWhoseNameStartsTheSameIsNotUvnvme) {
  const BinaryHooks hooks = Read(ELF_FIXTURE_OTHER_PROVIDER);
  EXPECT_FALSE(hooks.uvnvme_usdt);
  EXPECT_FALSE(hooks.uvnvme_tally);
}

TEST(ElfHooks, TheSpdkCompletionFunctionIsFoundInTheSymbols) {
  const BinaryHooks hooks = Read(ELF_FIXTURE_SPDK);
  EXPECT_TRUE(hooks.spdk_symbol);
  EXPECT_FALSE(hooks.uvnvme_usdt);
}

TEST(ElfHooks, ABinaryWithNeitherOffersNothing) {
  const BinaryHooks hooks = Read(ELF_FIXTURE_PLAIN);
  EXPECT_FALSE(hooks.uvnvme_usdt);
  EXPECT_FALSE(hooks.uvnvme_tally);
  EXPECT_FALSE(hooks.spdk_symbol);
}

TEST(ElfHooks, AMissingFileIsNotFoundWithItsPath) {
  auto hooks = ReadBinaryHooks("/nonexistent/uvnvme-load");
  ASSERT_FALSE(hooks);
  EXPECT_EQ(hooks.error().code, ErrorCode::kNotFound);
  EXPECT_NE(hooks.error().message.find("/nonexistent/uvnvme-load"), std::string::npos) << hooks.error().message;
}

TEST(ElfHooks, AFileThatIsNotElfOffersNothing) {
  char path[] = "/tmp/elf_hooks_test.XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << "#!/bin/sh\necho not a binary\n";
  auto hooks = ReadBinaryHooks(path);
  unlink(path);
  ASSERT_TRUE(hooks) << hooks.error().message;
  EXPECT_FALSE(hooks->uvnvme_usdt);
  EXPECT_FALSE(hooks->spdk_symbol);
}

}  // namespace
}  // namespace nvmeadapt::collect
