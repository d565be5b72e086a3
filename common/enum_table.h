// SPDX-License-Identifier: Apache-2.0
// The one table of an enum: each value's word (logs, metric labels, config and trace text, the CLI), the words
// parsing accepts, and the number of the matching value of the API's protobuf enum (proto/nvmeadapt/v1). The
// number is a plain int so that the tables, and the engine that uses them, include no protobuf header: the
// config layer casts it (agent/config/proto_enums.h), and checks there at compile time that it matches.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace nvmeadapt {

inline constexpr int kNoProtoValue = -1;  // an enum value, or a whole enum, the API has no counterpart for

template <class Enum>
struct EnumWord {
  Enum value{};
  std::string_view name;
  int proto = kNoProtoValue;
};

// A value may stand in more than one row: its first row gives its name and its proto number, later rows are
// further words that parsing accepts.
template <class Enum, size_t N>
class EnumTable {
 public:
  constexpr EnumTable(const EnumWord<Enum> (&rows)[N], std::string_view unknown_name) : unknown_name_(unknown_name) {
    for (size_t i = 0; i < N; ++i) rows_[i] = rows[i];
  }

  // `unknown_name` for a value outside the table.
  constexpr std::string_view Name(Enum value) const {
    for (const EnumWord<Enum>& row : rows_) {
      if (row.value == value) return row.name;
    }
    return unknown_name_;
  }

  constexpr std::optional<Enum> Parse(std::string_view name) const {
    for (const EnumWord<Enum>& row : rows_) {
      if (row.name == name) return row.value;
    }
    return std::nullopt;
  }

  // 0 (the API's UNSPECIFIED) for a value outside the table or without a counterpart.
  constexpr int Proto(Enum value) const {
    for (const EnumWord<Enum>& row : rows_) {
      if (row.value == value) return row.proto == kNoProtoValue ? 0 : row.proto;
    }
    return 0;
  }

  // nullopt for a number no value has (the API's UNSPECIFIED, or one from a newer API).
  constexpr std::optional<Enum> FromProto(int number) const {
    for (const EnumWord<Enum>& row : rows_) {
      if (row.proto != kNoProtoValue && row.proto == number) return row.value;
    }
    return std::nullopt;
  }

  constexpr const EnumWord<Enum>* begin() const { return rows_; }
  constexpr const EnumWord<Enum>* end() const { return rows_ + N; }

  // The names, "a, b, c", for error messages.
  std::string Choices() const {
    std::string out;
    for (const EnumWord<Enum>& row : rows_) {
      if (Name(row.value) != row.name) continue;  // a further word, not the value's name
      if (!out.empty()) out += ", ";
      out += row.name;
    }
    return out;
  }

 private:
  EnumWord<Enum> rows_[N];
  std::string_view unknown_name_;
};

}  // namespace nvmeadapt
