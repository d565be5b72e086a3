// SPDX-License-Identifier: Apache-2.0
// Log lines quote names peers chose: control characters in them are escaped, so none forges a line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/log.h"

namespace nvmeadapt {
namespace {

TEST(LogEscape, ControlCharactersAreWrittenAsHex) {
  EXPECT_EQ(EscapeControlCharacters("plain name.sock"), "plain name.sock");
  EXPECT_EQ(EscapeControlCharacters("a\nb\rc\td\x1b[31m\x7f"), "a\\x0ab\\x0dc\\x09d\\x1b[31m\\x7f");
  EXPECT_EQ(EscapeControlCharacters(std::string_view("nul\0end", 7)), "nul\\x00end");
  EXPECT_EQ(EscapeControlCharacters("caf\xc3\xa9"), "caf\xc3\xa9") << "UTF-8 is not a control character";
}

// Issue 45 (terminal_escape): C1 controls (CSI is U+009B) and bytes of no UTF-8 sequence, which a terminal may
// act on and which no protobuf string may hold, are escaped too; printable UTF-8 of every length is kept.
TEST(LogEscape, terminal_escape_c1_controls_and_invalid_utf8_are_written_as_hex) {
  EXPECT_EQ(EscapeControlCharacters("a\xc2\x9b" "31mb"), "a\\xc2\\x9b31mb");
  EXPECT_EQ(EscapeControlCharacters("\xc2\x80\xc2\x9f\xc2\xa0"), "\\xc2\\x80\\xc2\\x9f\xc2\xa0");
  EXPECT_EQ(EscapeControlCharacters("x\xffy\xc3"), "x\\xffy\\xc3") << "a lone byte, a sequence cut short";
  EXPECT_EQ(EscapeControlCharacters("\xc0\xaf"), "\\xc0\\xaf") << "an overlong '/'";
  EXPECT_EQ(EscapeControlCharacters("\xed\xa0\x80"), "\\xed\\xa0\\x80") << "a surrogate";
  EXPECT_EQ(EscapeControlCharacters("\xe2\x82\xac \xf0\x9f\x92\xbe"), "\xe2\x82\xac \xf0\x9f\x92\xbe");
}

TEST(LogEscape, ASocketNameWithANewlineStaysOnOneLine) {
  char path[] = "/tmp/nvme-adapt-log-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const int saved = dup(STDERR_FILENO);
  ASSERT_GE(saved, 0);
  ASSERT_GE(dup2(fd, STDERR_FILENO), 0);
  NA_WARN("found socket /run/uvnvme/x.sock\n2026-12-03T10:00:00.000Z error forged line");
  std::fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  close(fd);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  unlink(path);
  const std::string written = text.str();
  ASSERT_FALSE(written.empty());
  EXPECT_EQ(written.find('\n'), written.size() - 1) << "more than one line: " << written;
  EXPECT_NE(written.find("x.sock\\x0a2026-12-03"), std::string::npos) << written;
}

}  // namespace
}  // namespace nvmeadapt
