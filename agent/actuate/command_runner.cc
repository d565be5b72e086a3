#include "agent/actuate/command_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

extern char** environ;

namespace nvmeadapt::actuate {
namespace {

constexpr const char* kSecretOptions[] = {"--dhchap-secret=", "--dhchap-ctrl-secret=", "--tls-key="};

// A clean start for the child: nothing blocked, every signal the daemon may catch or ignore at its default.
Status CleanSignals(posix_spawnattr_t& attr, const std::string& line) {
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD, SIGUSR1, SIGUSR2, SIGQUIT}) sigaddset(&defaults, sig);
  if (int rc = posix_spawnattr_setsigmask(&attr, &none); rc != 0) return SysError("signal mask for", line, rc);
  if (int rc = posix_spawnattr_setsigdefault(&attr, &defaults); rc != 0) return SysError("signals for", line, rc);
  if (int rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF); rc != 0) {
    return SysError("spawn flags for", line, rc);
  }
  return OkStatus();
}

// Reads the child's output until it closes the pipe or `deadline`; false at the deadline.
bool ReadOutput(int fd, std::chrono::steady_clock::time_point deadline, std::string& output) {
  char buffer[1024];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd readable{fd, POLLIN, 0};
    const int ready = poll(&readable, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) return false;
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;  // end of output (or a read error: the status still tells)
    const size_t room = CommandRunner::kMaxOutput - std::min(output.size(), CommandRunner::kMaxOutput);
    output.append(buffer, std::min(room, static_cast<size_t>(n)));
  }
}

}  // namespace

std::string CommandLine(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& arg : argv) {
    std::string shown = arg;
    for (const char* secret : kSecretOptions) {
      if (arg.rfind(secret, 0) == 0) shown = std::string(secret) + "<secret>";
    }
    line += (line.empty() ? "" : " ") + shown;
  }
  return line;
}

Result<CommandOutcome> SystemCommandRunner::Run(const std::vector<std::string>& argv) {
  if (argv.empty()) return MakeError(ErrorCode::kInvalidArgument, "no command to run");
  const std::string line = CommandLine(argv);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (Status clean = CleanSignals(attr, line); !clean) {
    posix_spawnattr_destroy(&attr);
    return clean.error();
  }
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    posix_spawnattr_destroy(&attr);
    return SysError("pipe for", line, errno);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(pipe_fds[1]);
  if (spawned != 0) {
    close(pipe_fds[0]);
    if (spawned == ENOENT) {
      Error missing = MakeError(ErrorCode::kNotFound, "cannot run " + line + ": " + argv[0] + " not found in PATH");
      missing.sys_errno = spawned;
      return missing;
    }
    return SysError("run", line, spawned);
  }
  CommandOutcome outcome;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
  const bool closed = ReadOutput(pipe_fds[0], deadline, outcome.output);
  close(pipe_fds[0]);
  int status = 0;
  // A child may close its output and go on: the deadline holds for its exit too.
  bool reaped = false;
  while (closed && !reaped) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done < 0 && errno != EINTR) return SysError("wait for", line, errno);
    reaped = done == pid;
    if (reaped || std::chrono::steady_clock::now() >= deadline) break;
    usleep(1000);
  }
  if (!reaped) {
    kill(pid, SIGKILL);
    outcome.timed_out = true;
    while (waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR) return SysError("wait for", line, errno);
    }
  }
  outcome.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  while (!outcome.output.empty() && (outcome.output.back() == '\n' || outcome.output.back() == ' ')) {
    outcome.output.pop_back();
  }
  if (outcome.timed_out) {
    outcome.output += std::string(outcome.output.empty() ? "" : "; ") + "killed after " +
                      std::to_string(timeout_ms_) + " ms";
  }
  return outcome;
}

}  // namespace nvmeadapt::actuate
