// SPDX-License-Identifier: Apache-2.0
// A small JSON writer for the model's report: objects and arrays built in order, numbers and strings.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

namespace nvmeadapt::sim {

class Json {
 public:
  static std::string Quote(std::string_view s) {
    std::string out = "\"";
    for (char ch : s) {
      if (ch == '"' || ch == '\\') {
        out += '\\';
        out += ch;
      } else if (static_cast<unsigned char>(ch) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", ch);
        out += buf;
      } else {
        out += ch;
      }
    }
    return out + "\"";
  }
  static std::string Number(double v) {
    if (!std::isfinite(v)) return "null";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
  }

  // Members of an object: "key": value, separated by commas.
  Json& Key(std::string_view key) {
    Comma();
    text_ += Quote(key) + ": ";
    pending_key_ = true;
    return *this;
  }
  Json& Value(double v) { return Raw(Number(v)); }
  Json& Value(std::string_view v) { return Raw(Quote(v)); }
  Json& Value(const char* v) { return Raw(Quote(v)); }
  Json& Value(bool v) { return Raw(v ? "true" : "false"); }
  Json& Raw(std::string_view raw) {
    if (!pending_key_) Comma();
    pending_key_ = false;
    text_ += raw;
    first_ = false;
    return *this;
  }
  Json& Open(char bracket) {
    if (!pending_key_) Comma();
    pending_key_ = false;
    text_ += bracket;
    first_ = true;
    return *this;
  }
  Json& Close(char bracket) {
    text_ += bracket;
    first_ = false;
    return *this;
  }
  const std::string& Text() const { return text_; }

 private:
  void Comma() {
    if (!first_) text_ += ", ";
    first_ = false;
  }
  std::string text_;
  bool first_ = true;
  bool pending_key_ = false;
};

}  // namespace nvmeadapt::sim
