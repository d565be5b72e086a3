// SPDX-License-Identifier: Apache-2.0
#include "agent/ctl/terminal_text.h"

#include "common/log.h"

namespace nvmeadapt::ctl {

std::string TerminalSafe(std::string_view line, TerminalMode mode) {
  if (mode == TerminalMode::kText) return EscapeControlCharacters(line);
  std::string out;
  out.reserve(line.size());
  for (size_t i = 0; i < line.size(); ++i) {
    const auto byte = static_cast<unsigned char>(line[i]);
    const auto next = i + 1 < line.size() ? static_cast<unsigned char>(line[i + 1]) : 0;
    if (byte == 0xc2 && next >= 0x80 && next < 0xa0) {  // U+0080..U+009F in UTF-8
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out.push_back(kHex[next >> 4]);
      out.push_back(kHex[next & 0xf]);
      ++i;
    } else {
      out.push_back(line[i]);
    }
  }
  return out;
}

TerminalText::TerminalText(std::ostream& stream, TerminalMode mode)
    : stream_(stream), target_(stream.rdbuf(this)), mode_(mode) {}

TerminalText::~TerminalText() {
  if (!line_.empty()) WriteLine(false);
  stream_.rdbuf(target_);
  target_->pubsync();
}

TerminalText::int_type TerminalText::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  if (traits_type::to_char_type(c) == '\n') {
    WriteLine(true);
  } else {
    line_.push_back(traits_type::to_char_type(c));
  }
  return c;
}

std::streamsize TerminalText::xsputn(const char* data, std::streamsize size) {
  for (std::streamsize i = 0; i < size; ++i) overflow(traits_type::to_int_type(data[i]));
  return size;
}

// A flush writes what it has: a line cut there may split a UTF-8 sequence, whose halves are then escaped.
int TerminalText::sync() {
  if (!line_.empty()) WriteLine(false);
  return target_->pubsync();
}

void TerminalText::WriteLine(bool newline) {
  std::string out = TerminalSafe(line_, mode_);
  if (newline) out.push_back('\n');
  target_->sputn(out.data(), static_cast<std::streamsize>(out.size()));
  line_.clear();
}

}  // namespace nvmeadapt::ctl
