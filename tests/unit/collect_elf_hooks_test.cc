// SPDX-License-Identifier: Apache-2.0
// What ReadBinaryHooks finds in real ELF files built for the test (tests/unit/elf_hooks_fixture.cc), and
// how it refuses what it cannot read.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>

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

// Issue #37: a FIFO where a driver's executable was froze the agent in open(2). Refused at once now, as is
// any file that is not a regular one and a link.
TEST(ElfHooks, AFifoALinkAndADirectoryAreRefusedWithoutWaiting) {
  char dir[] = "/tmp/elf_hooks_fifo.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/driver (deleted)", link = std::string(dir) + "/link";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(symlink(ELF_FIXTURE_UVNVME, link.c_str()), 0);
  for (const std::string& path : {fifo, link, std::string(dir)}) {
    auto read = std::async(std::launch::async, [&] { return ReadBinaryHooks(path); });
    if (read.wait_for(std::chrono::seconds(2)) != std::future_status::ready) {
      const int writer = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // lets a reader blocked in open go
      ADD_FAILURE() << path << ": still reading after 2 s";
      read.wait();
      if (writer >= 0) close(writer);
      continue;
    }
    auto hooks = read.get();
    ASSERT_FALSE(hooks) << path;
    EXPECT_NE(hooks.error().message.find(path), std::string::npos) << hooks.error().message;
  }
  EXPECT_NE(ReadBinaryHooks(fifo).error().message.find("not a regular file"), std::string::npos);
  unlink(fifo.c_str());
  unlink(link.c_str());
  rmdir(dir);
}

TEST(ElfHooks, TheKernelsLinkToARunningImageIsFollowed) {
  auto hooks = ReadBinaryHooks("/proc/" + std::to_string(getpid()) + "/exe");
  EXPECT_TRUE(hooks) << hooks.error().message;
}

// Issue 45: what is checked is what is read and attached to, whatever the path names afterwards.
TEST(AttachReopen, ThePinnedPathReachesTheCheckedFileAfterAFifoIsRenamedOverIt) {
  char dir[] = "/tmp/elf_hooks_swap.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string binary = std::string(dir) + "/driver", fifo = std::string(dir) + "/fifo";
  {
    std::ifstream in(ELF_FIXTURE_UVNVME, std::ios::binary);
    std::ofstream out(binary, std::ios::binary);
    out << in.rdbuf();
  }
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto checked = CheckedBinary::Open(binary);
  ASSERT_TRUE(checked) << checked.error().message;
  ASSERT_EQ(rename(fifo.c_str(), binary.c_str()), 0);
  auto hooks = ReadBinaryHooks(*checked);
  ASSERT_TRUE(hooks) << hooks.error().message;
  EXPECT_TRUE(hooks->uvnvme_usdt);
  const int reopened = open(checked->PinnedPath().c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reopened, 0) << checked->PinnedPath();
  struct stat st{};
  ASSERT_EQ(fstat(reopened, &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode)) << "the pinned path led to what the path names now";
  close(reopened);
  unlink(binary.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace nvmeadapt::collect
