// The real command runner: a deadline, and children that start with a clean signal mask (issue #37: the
// daemon blocks SIGTERM, SIGINT and SIGHUP in its threads, and a child kept that mask: it could not be stopped).
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <sstream>

#include "agent/actuate/command_runner.h"

namespace nvmeadapt::actuate {
namespace {

// The hex mask of `field` ("SigBlk", "SigIgn") in a /proc/PID/status text.
unsigned long long Mask(const std::string& status, const std::string& field) {
  std::istringstream lines(status);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1), nullptr, 16);
  }
  ADD_FAILURE() << "no " << field << " in " << status;
  return ~0ull;
}

TEST(CommandRunner, ChildrenStartWithNoSignalBlockedOrIgnored) {
  sigset_t blocked, before;
  sigemptyset(&blocked);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&blocked, sig);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &blocked, &before), 0);
  struct sigaction ignore {}, old_term {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGTERM, &ignore, &old_term), 0);

  auto outcome = SystemCommandRunner().Run({"cat", "/proc/self/status"});

  sigaction(SIGTERM, &old_term, nullptr);
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  ASSERT_TRUE(outcome) << outcome.error().ToString();
  ASSERT_EQ(outcome->exit_status, 0) << outcome->output;
  EXPECT_EQ(Mask(outcome->output, "SigBlk"), 0u) << "the child inherited the daemon's blocked signals";
  EXPECT_EQ(Mask(outcome->output, "SigIgn") & (1ull << (SIGTERM - 1)), 0u) << "the child ignores SIGTERM";
}

TEST(CommandRunner, AChildPastTheDeadlineIsKilled) {
  const auto start = std::chrono::steady_clock::now();
  auto outcome = SystemCommandRunner(/*timeout_ms=*/300).Run({"sleep", "30"});
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(outcome) << outcome.error().ToString();
  EXPECT_TRUE(outcome->timed_out);
  EXPECT_EQ(outcome->exit_status, 128 + SIGKILL);
  EXPECT_NE(outcome->output.find("killed after 300 ms"), std::string::npos) << outcome->output;
  EXPECT_LT(took, std::chrono::seconds(5));

  // One that closes its output and goes on is held to the deadline too.
  auto quiet = SystemCommandRunner(300).Run({"sh", "-c", "exec >&- 2>&-; sleep 30"});
  ASSERT_TRUE(quiet) << quiet.error().ToString();
  EXPECT_TRUE(quiet->timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(CommandRunner, AMissingProgramIsNotFoundNamingIt) {
  auto outcome = SystemCommandRunner().Run({"nvme-adapt-no-such-program", "connect"});
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().code, ErrorCode::kNotFound);
  EXPECT_NE(outcome.error().message.find("nvme-adapt-no-such-program not found in PATH"), std::string::npos)
      << outcome.error().message;
}

TEST(CommandRunner, AQuickCommandGivesItsStatusAndOutput) {
  auto outcome = SystemCommandRunner().Run({"sh", "-c", "echo hello; exit 3"});
  ASSERT_TRUE(outcome) << outcome.error().ToString();
  EXPECT_EQ(outcome->exit_status, 3);
  EXPECT_EQ(outcome->output, "hello");
  EXPECT_FALSE(outcome->timed_out);
}

}  // namespace
}  // namespace nvmeadapt::actuate
