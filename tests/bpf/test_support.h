// SPDX-License-Identifier: Apache-2.0
// Helpers for the root-only BPF tests: run a command, a loop device over a temp file (removed in all
// cases the process survives), block device counters.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace nvmeadapt::testing {

// Runs argv (PATH lookup), waits, returns its stdout; a non-zero exit is an error carrying stderr.
Result<std::string> RunCommand(const std::vector<std::string>& argv);

// A child with its stdin, stdout and stderr piped to us.
struct Child {
  pid_t pid = -1;
  int in = -1;
  int out = -1;
  int err = -1;
};
Result<Child> Spawn(const std::vector<std::string>& argv);
// Waits at most timeout_s, killing the child after that; returns its exit code (128 + signal if killed).
// What is left of its stdout and stderr (at most a pipe's worth) goes to *out and *err.
Result<int> Wait(Child& child, int timeout_s, std::string* out = nullptr, std::string* err = nullptr);
std::string ReadLine(int fd);  // up to '\n' or EOF, without the '\n'
std::string ReadAll(int fd);

// Empty when the test may run; otherwise what is missing ("needs root", "fio not installed").
std::string MissingForBpfTests();

class LoopDevice {
 public:
  static Result<LoopDevice> Create(uint64_t bytes);
  LoopDevice(LoopDevice&& other) noexcept;
  LoopDevice& operator=(LoopDevice&&) = delete;
  ~LoopDevice();

  const std::string& path() const { return device_; }  // "/dev/loop3"
  std::string name() const;                              // "loop3"
  uint32_t dev() const { return dev_; }                  // kernel dev_t: major << 20 | minor

 private:
  LoopDevice() = default;
  std::string dir_;
  std::string backing_;
  std::string device_;
  uint32_t dev_ = 0;
};

struct BlockStat {
  uint64_t completions = 0;  // reads + writes + discards + flushes completed
  uint64_t reads = 0;
  uint64_t writes = 0;
};
Result<BlockStat> ReadBlockStat(const std::string& name);

// fio, 4 KiB, direct I/O, libaio, on `device`; `io_bytes` of I/O in total.
Status RunFio(const std::string& device, const std::string& rw, uint64_t io_bytes, int iodepth = 16);

}  // namespace nvmeadapt::testing
