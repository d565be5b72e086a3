// Running a tool (nvme-cli) for a lever: argv only, never a shell, its output kept for the error message.
// An interface, so that tests give levers a fake that records the calls and answers as told.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace nvmeadapt::actuate {

struct CommandOutcome {
  int exit_status = 0;  // the exit status; 128 + N when killed by signal N
  std::string output;   // stdout and stderr together, at most kMaxOutput bytes
  bool timed_out = false;  // killed (SIGKILL) at the runner's deadline
};

class CommandRunner {
 public:
  static constexpr size_t kMaxOutput = 4096;
  virtual ~CommandRunner() = default;
  // Runs argv[0] (searched in PATH) with argv and waits for it. An error only when it could not be run at
  // all (kNotFound: no such program); a program that ran and failed is an outcome with its status.
  virtual Result<CommandOutcome> Run(const std::vector<std::string>& argv) = 0;
};

// posix_spawnp with stdout and stderr on a pipe, stdin on /dev/null. The child starts with no signal blocked
// and the default action for every signal the daemon handles (the daemon blocks SIGTERM, SIGINT and SIGHUP
// in its threads, a mask a child would otherwise inherit and keep: it could not be stopped). A child still
// running at the deadline is killed and its outcome says timed_out.
class SystemCommandRunner final : public CommandRunner {
 public:
  static constexpr int kDefaultTimeoutMs = 30'000;
  explicit SystemCommandRunner(int timeout_ms = kDefaultTimeoutMs) : timeout_ms_(timeout_ms) {}
  Result<CommandOutcome> Run(const std::vector<std::string>& argv) override;

 private:
  int timeout_ms_;
};

// "nvme connect --transport=tcp ...": argv as one line for messages. The values of options that carry
// secrets (--dhchap-secret=, --dhchap-ctrl-secret=, --tls-key=) are shown as "<secret>".
std::string CommandLine(const std::vector<std::string>& argv);

}  // namespace nvmeadapt::actuate
