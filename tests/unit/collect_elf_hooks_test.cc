// What ReadBinaryHooks finds in real ELF files built for the test (tests/unit/elf_hooks_fixture.cc), and
// how it refuses what it cannot read.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "agent/collect/elf_hooks.h"

namespace nvmeadapt::collect {
namespace {

// Each fixture binary and what it offers: the uvnvme provider with and without its tally probe (drivers
// before it fire `complete` only), a provider whose name only starts with "uvnvme", SPDK's completion
// function among the symbols, and none of them.
TEST(ElfHooks, EachBinaryOffersWhatItsNotesAndSymbolsHold) {
  struct Case {
    const char* path;
    bool uvnvme_usdt, uvnvme_tally, spdk_symbol;
  } cases[] = {
      {ELF_FIXTURE_UVNVME, true, true, false},          {ELF_FIXTURE_UVNVME_COMPLETE_ONLY, true, false, false},
      {ELF_FIXTURE_OTHER_PROVIDER, false, false, false}, {ELF_FIXTURE_SPDK, false, false, true},
      {ELF_FIXTURE_PLAIN, false, false, false},
  };
  for (const Case& c : cases) {
    auto hooks = ReadBinaryHooks(c.path);
    ASSERT_TRUE(hooks) << c.path << ": " << hooks.error().message;
    EXPECT_EQ(hooks->uvnvme_usdt, c.uvnvme_usdt) << c.path;
    EXPECT_EQ(hooks->uvnvme_tally, c.uvnvme_tally) << c.path;
    EXPECT_EQ(hooks->spdk_symbol, c.spdk_symbol) << c.path;
  }
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
