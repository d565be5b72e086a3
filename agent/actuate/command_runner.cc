#include "agent/actuate/command_runner.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

extern char** environ;

namespace nvmeadapt::actuate {

std::string CommandLine(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& arg : argv) line += (line.empty() ? "" : " ") + arg;
  return line;
}

Result<CommandOutcome> SystemCommandRunner::Run(const std::vector<std::string>& argv) {
  if (argv.empty()) return MakeError(ErrorCode::kInvalidArgument, "no command to run");
  const std::string line = CommandLine(argv);
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return SysError("pipe for", line, errno);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (spawned != 0) {
    close(pipe_fds[0]);
    return SysError("run", line, spawned);
  }
  CommandOutcome outcome;
  char buffer[1024];
  for (;;) {
    const ssize_t n = read(pipe_fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // end of output (or a read error: the status still tells)
    const size_t room = CommandRunner::kMaxOutput - std::min(outcome.output.size(), CommandRunner::kMaxOutput);
    outcome.output.append(buffer, std::min(room, static_cast<size_t>(n)));
  }
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return SysError("wait for", line, errno);
  }
  outcome.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  while (!outcome.output.empty() && (outcome.output.back() == '\n' || outcome.output.back() == ' ')) {
    outcome.output.pop_back();
  }
  return outcome;
}

}  // namespace nvmeadapt::actuate
