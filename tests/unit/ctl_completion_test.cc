// SPDX-License-Identifier: Apache-2.0
// nvme-adaptctl's shell completions and output formats of `report`, without an agent: the completion
// commands parse and run locally, and the scripts hold every command path of the table (the shells
// themselves run them in ctl_completion_shells.sh).
#include <gtest/gtest.h>

#include <sstream>

#include "agent/ctl/cli.h"
#include "agent/ctl/command_table.h"
#include "agent/ctl/completion.h"
#include "agent/ctl/output.h"
#include "nvmeadapt/v1/agent.pb.h"

namespace nvmeadapt::ctl {
namespace {

CommandLine ParseLine(std::vector<const char*> words, std::ostream& out) {
  words.insert(words.begin(), "nvme-adaptctl");
  return ParseCommandLine(Commands(), static_cast<int>(words.size()), words.data(), out);
}

std::string RunLocal(std::vector<const char*> words, int* exit_code) {
  std::ostringstream out;
  CommandLine line = ParseLine(std::move(words), out);
  if (line.exit_now) {
    *exit_code = line.exit_code;
    return out.str();
  }
  EXPECT_NE(line.command->run_local, nullptr) << "a completion needs no agent";
  *exit_code = line.command->run_local == nullptr ? -1 : line.command->run_local(line.args, out);
  return out.str();
}

TEST(Completion, ZshIsACommandAndCoversEveryCommandPath) {
  int exit_code = -1;
  const std::string script = RunLocal({"completion", "zsh"}, &exit_code);
  ASSERT_EQ(exit_code, 0) << script;
  EXPECT_EQ(script.rfind("#compdef nvme-adaptctl\n", 0), 0u) << "compinit autoloads it by its first line";
  EXPECT_EQ(script, ZshCompletion(Commands()));
  for (const CommandSpec& command : Commands()) {
    std::string path;
    for (const std::string& word : command.words) {
      const std::string arm = "'" + path + "|" + word + "') command_path='" + (path.empty() ? "" : path + " ") + word + "'";
      EXPECT_NE(script.find(arm), std::string::npos) << arm;
      path += (path.empty() ? "" : " ") + word;
    }
  }
  EXPECT_NE(script.find("'completion') candidates=(bash zsh "), std::string::npos) << script;
  EXPECT_NE(script.find("'policy set') candidates=("), std::string::npos);
  EXPECT_NE(script.find("--pace-slack"), std::string::npos);
  EXPECT_EQ(script.find("local path"), std::string::npos) << "zsh ties $path to $PATH";
}

TEST(Completion, BashStaysAndOtherShellsAreUsageErrors) {
  int exit_code = -1;
  const std::string bash = RunLocal({"completion", "bash"}, &exit_code);
  ASSERT_EQ(exit_code, 0);
  EXPECT_EQ(bash, BashCompletion(Commands()));
  EXPECT_NE(bash.find("complete -F _nvme_adaptctl nvme-adaptctl"), std::string::npos);
  EXPECT_NE(bash.find("'completion') words='bash zsh "), std::string::npos) << bash;
  RunLocal({"completion", "fish"}, &exit_code);
  EXPECT_EQ(exit_code, 2);
  RunLocal({"completion"}, &exit_code);
  EXPECT_EQ(exit_code, 2);
}

TEST(ReportOutput, EveryFormatOfDashOIsHonoured) {
  v1::Report report;
  report.set_collector("bpf");
  report.add_controllers()->set_controller("nvme0");
  const std::pair<const char*, const char*> formats[] = {{"json", "{\"node\":\"\""},
                                                         {"yaml", "---\n\"node\": \"\"\n"}};
  for (const auto& [format, start] : formats) {
    std::ostringstream out;
    CommandLine line = ParseLine({"report", "-o", format}, out);
    ASSERT_FALSE(line.exit_now) << format;
    std::ostringstream printed;
    ASSERT_TRUE(PrintedAsData(line.args, report, printed)) << format;
    EXPECT_EQ(printed.str().rfind(start, 0), 0u) << printed.str();
    EXPECT_NE(printed.str().find("nvme0"), std::string::npos) << printed.str();
  }
  std::ostringstream out;
  CommandLine json = ParseLine({"report", "--json"}, out);
  std::ostringstream printed;
  EXPECT_TRUE(PrintedAsData(json.args, report, printed));
  CommandLine table = ParseLine({"report"}, out);
  EXPECT_FALSE(PrintedAsData(table.args, report, printed)) << "the table is the report's own";
}

}  // namespace
}  // namespace nvmeadapt::ctl
