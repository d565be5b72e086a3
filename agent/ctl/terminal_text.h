// SPDX-License-Identifier: Apache-2.0
// What nvme-adaptctl writes reaches an operator's terminal, and the agent's answers quote names drivers chose
// (socket files, their errors): an escape sequence among them would clear the screen or retitle the
// terminal (issue 45). Every byte nvme-adaptctl writes goes through a TerminalText filter, line by line.
#pragma once

#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>

namespace nvmeadapt::ctl {

// kText (tables, text, --help, errors): every non-printable (C0 controls but the newline, ESC, DEL, C1
// controls, bytes of no valid UTF-8 sequence) as \xNN, as the agent's log writes them. kData (-o json, -o
// yaml: control characters arrive escaped by JSON already): C1 controls as \u00NN, which both formats read
// as the same character, so the document stays valid.
enum class TerminalMode { kText, kData };

std::string TerminalSafe(std::string_view line, TerminalMode mode);

// Filters what `stream` writes through TerminalSafe until destroyed, then gives the stream its buffer back.
class TerminalText final : public std::streambuf {
 public:
  TerminalText(std::ostream& stream, TerminalMode mode);
  ~TerminalText() override;
  TerminalText(const TerminalText&) = delete;
  TerminalText& operator=(const TerminalText&) = delete;
  void set_mode(TerminalMode mode) { mode_ = mode; }

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* data, std::streamsize size) override;
  int sync() override;

 private:
  void WriteLine(bool newline);

  std::ostream& stream_;
  std::streambuf* target_;
  TerminalMode mode_;
  std::string line_;
};

}  // namespace nvmeadapt::ctl
