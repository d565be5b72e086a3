// SPDX-License-Identifier: Apache-2.0
// File helpers for tests: a temporary directory removed at the end, copies of captured trees, and a record of
// every file's content and mtime to prove that something wrote nothing.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

namespace nvmeadapt::testing {

inline std::string DataDir() { return NVME_ADAPT_TEST_DATA; }
inline std::string SysfsCase(const std::string& name) { return DataDir() + "/sysfs/" + name; }

class TempDir {
 public:
  TempDir() {
    std::string pattern = ::testing::TempDir() + "/nvme-adapt-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& relative) const { return path_ + "/" + relative; }

 private:
  std::string path_;
};

inline void CopyTree(const std::string& from, const std::string& to) {
  std::filesystem::copy(from, to,
                        std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
}

inline void WriteFile(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::trunc);
  out << content;
  if (!out) throw std::runtime_error("cannot write " + path);
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Content and modification time (ns) of every regular file under root, by relative path.
inline std::map<std::string, std::pair<std::string, int64_t>> TreeState(const std::string& root) {
  std::map<std::string, std::pair<std::string, int64_t>> state;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    struct stat st{};
    stat(entry.path().c_str(), &st);
    const int64_t mtime = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
    state[std::filesystem::relative(entry.path(), root).string()] = {ReadFile(entry.path()), mtime};
  }
  return state;
}

}  // namespace nvmeadapt::testing
