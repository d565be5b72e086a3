// SPDX-License-Identifier: Apache-2.0
#include "tests/bpf/test_support.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace nvmeadapt::testing {
namespace {

std::string Drain(int fd) {
  std::string text;
  char buffer[4096];
  ssize_t got;
  while ((got = read(fd, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(got));
  return text;
}

bool OnPath(const std::string& tool) {
  return RunCommand({"sh", "-c", "command -v " + tool}).ok();
}

}  // namespace

Result<Child> Spawn(const std::vector<std::string>& argv) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
    return SysError("pipe", argv[0], errno);
  const pid_t pid = fork();
  if (pid < 0) return SysError("fork", argv[0], errno);
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  return Child{pid, in[1], out[0], err[0]};
}

Result<int> Wait(Child& child, int timeout_s, std::string* out, std::string* err) {
  int status = 0;
  if (child.in >= 0) close(child.in);  // a child waiting for input sees EOF
  child.in = -1;
  for (int waited_ms = 0;; waited_ms += 10) {
    const pid_t done = waitpid(child.pid, &status, WNOHANG);
    if (done < 0) return SysError("waitpid", std::to_string(child.pid), errno);
    if (done == child.pid) break;
    if (waited_ms >= timeout_s * 1000) {
      kill(child.pid, SIGKILL);
      waitpid(child.pid, &status, 0);
      break;
    }
    usleep(10'000);
  }
  const std::string rest_out = child.out >= 0 ? Drain(child.out) : "";
  const std::string rest_err = child.err >= 0 ? Drain(child.err) : "";
  if (out != nullptr) *out = rest_out;
  if (err != nullptr) *err = rest_err;
  for (int* fd : {&child.out, &child.err}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
  child.pid = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string ReadLine(int fd) {
  std::string line;
  char c;
  while (read(fd, &c, 1) == 1 && c != '\n') line.push_back(c);
  return line;
}

std::string ReadAll(int fd) { return Drain(fd); }

Result<std::string> RunCommand(const std::vector<std::string>& argv) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) return SysError("pipe", argv[0], errno);
  const pid_t child = fork();
  if (child < 0) return SysError("fork", argv[0], errno);
  if (child == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  // Both pipes are read to the end; stderr is small, so reading stdout first cannot deadlock in practice.
  std::string stdout_text = Drain(out[0]);
  std::string stderr_text = Drain(err[0]);
  close(out[0]);
  close(err[0]);
  int status = 0;
  if (waitpid(child, &status, 0) < 0) return SysError("waitpid", argv[0], errno);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string command;
    for (const std::string& arg : argv) command += arg + " ";
    return MakeError(ErrorCode::kIo, command + "failed (status " + std::to_string(status) + "): " + stderr_text);
  }
  return stdout_text;
}

std::string MissingForBpfTests() {
  if (geteuid() != 0) return "needs root (loads BPF programs, creates loop devices)";
  for (const char* tool : {"fio", "losetup"}) {
    if (!OnPath(tool)) return std::string(tool) + " is not installed (scripts/install-deps)";
  }
  return {};
}

Result<LoopDevice> LoopDevice::Create(uint64_t bytes) {
  LoopDevice loop;
  char dir[] = "/tmp/na-loop-XXXXXX";
  if (mkdtemp(dir) == nullptr) return SysError("mkdtemp", dir, errno);
  loop.dir_ = dir;
  loop.backing_ = loop.dir_ + "/backing";
  // Written out, not fallocated: random direct writes into unwritten extents split them into thousands,
  // and freeing those at unlink took 18 s on a busy disk.
  const int fd = open(loop.backing_.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) return SysError("create", loop.backing_, errno);
  const std::string zeros(1 << 20, '\0');
  for (uint64_t written = 0; written < bytes; written += zeros.size()) {
    if (write(fd, zeros.data(), zeros.size()) != static_cast<ssize_t>(zeros.size())) {
      const int err = errno;
      close(fd);
      return SysError("write", loop.backing_, err);
    }
  }
  if (fsync(fd) != 0) {
    const int err = errno;
    close(fd);
    return SysError("fsync", loop.backing_, err);
  }
  close(fd);
  auto device = RunCommand({"losetup", "--find", "--show", "--direct-io=on", loop.backing_});
  if (!device.ok()) return std::move(device).take_error();
  loop.device_ = *device;
  while (!loop.device_.empty() && loop.device_.back() == '\n') loop.device_.pop_back();
  struct stat info {};
  if (stat(loop.device_.c_str(), &info) != 0) return SysError("stat", loop.device_, errno);
  loop.dev_ = (major(info.st_rdev) << 20) | minor(info.st_rdev);
  // losetup may fall back to buffered I/O silently; the tests need the direct path.
  std::ifstream dio("/sys/block/" + loop.name() + "/loop/dio");
  int direct = 0;
  if (!(dio >> direct) || direct != 1)
    return MakeError(ErrorCode::kUnsupported, loop.device_ + ": direct I/O did not take (loop/dio != 1)");
  return loop;
}

LoopDevice::LoopDevice(LoopDevice&& other) noexcept
    : dir_(std::move(other.dir_)), backing_(std::move(other.backing_)), device_(std::move(other.device_)),
      dev_(other.dev_) {
  other.dir_.clear();
  other.device_.clear();
}

LoopDevice::~LoopDevice() {
  if (!device_.empty()) (void)RunCommand({"losetup", "-d", device_});
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::string LoopDevice::name() const { return std::filesystem::path(device_).filename().string(); }

Result<BlockStat> ReadBlockStat(const std::string& name) {
  const std::string path = "/sys/block/" + name + "/stat";
  std::ifstream in(path);
  if (!in) return SysError("open", path, errno);
  std::vector<uint64_t> f;
  for (uint64_t value; in >> value;) f.push_back(value);
  if (f.size() < 11) return MakeError(ErrorCode::kInvalidArgument, path + ": too few fields");
  BlockStat stat;
  stat.reads = f[0];
  stat.writes = f[4];
  stat.completions = f[0] + f[4] + (f.size() > 11 ? f[11] : 0) + (f.size() > 15 ? f[15] : 0);
  return stat;
}

Status RunFio(const std::string& device, const std::string& rw, uint64_t io_bytes, int iodepth) {
  auto run = RunCommand({"fio", "--name=na", "--filename=" + device, "--rw=" + rw, "--bs=4k", "--direct=1",
                         "--ioengine=libaio", "--iodepth=" + std::to_string(iodepth),
                         "--io_size=" + std::to_string(io_bytes), "--randrepeat=0", "--norandommap",
                         "--output-format=terse"});
  if (!run.ok()) return std::move(run).take_error();
  return OkStatus();
}

}  // namespace nvmeadapt::testing
