// SPDX-License-Identifier: Apache-2.0
// nvme-adaptctl without an agent: its values (durations, queue names, enum words), its command line and
// the requests it builds from it, and its tables.
#include <gtest/gtest.h>

#include <sstream>

#include "agent/ctl/cli.h"
#include "agent/ctl/command_table.h"
#include "agent/ctl/commands.h"
#include "agent/ctl/format.h"
#include "agent/ctl/output.h"
#include "agent/ctl/values.h"

namespace nvmeadapt::ctl {
namespace {

TEST(QueueNames, KernelAndUvnvme) {
  auto kernel = ParseQueueName("nvme0:q1");
  ASSERT_TRUE(kernel);
  EXPECT_EQ(kernel->controller(), "nvme0");
  EXPECT_EQ(kernel->queue(), 1u);
  auto uvnvme = ParseQueueName("uvnvme:1234:0:q2");
  ASSERT_TRUE(uvnvme);
  EXPECT_EQ(uvnvme->controller(), "uvnvme:1234:0");
  EXPECT_EQ(uvnvme->queue(), 2u);
  EXPECT_EQ(QueueName(*uvnvme), "uvnvme:1234:0:q2");
  for (const char* bad : {"nvme0", "nvme0:q", ":q1", "nvme0:qx", "nvme0:q-1"}) EXPECT_FALSE(ParseQueueName(bad)) << bad;
  EXPECT_EQ(ParseQueueName("nvme0").error().message,
            "queue 'nvme0': expected CONTROLLER:qN, e.g. nvme0:q1 or uvnvme:1234:0:q2");
}

TEST(EnumWords, ParseAndPrint) {
  EXPECT_EQ(*ParseOverrideMode("poll"), v1::REAP_MODE_POLL);
  EXPECT_EQ(*ParseOverrideMode("Interrupt"), v1::REAP_MODE_INTERRUPT);
  EXPECT_EQ(*ParseOverrideMode("none"), v1::REAP_MODE_UNSPECIFIED);
  EXPECT_FALSE(ParseOverrideMode("unspecified"));
  EXPECT_EQ(ParseOverrideMode("fast").error().message, "mode: expected one of interrupt, poll, none, got 'fast'");
  EXPECT_EQ(*ParseControllerMode("shadow"), v1::CONTROLLER_MODE_SHADOW);
  EXPECT_EQ(*ParseSource("uvnvme"), v1::SOURCE_UVNVME);
  EXPECT_EQ(*ParseEventKind("lever_error"), v1::EVENT_KIND_LEVER_ERROR);
  EXPECT_EQ(ShortName(v1::QUEUE_STATE_POLLING), "polling");
  EXPECT_EQ(ShortName(static_cast<v1::ReapMode>(9)), "(9)") << "a newer agent's value shows as its number";
}

// The command line as nvme-adaptctl parses it; a usage error or help ends it (exit_now).
CommandLine ParseLine(std::vector<const char*> words, std::ostream& out) {
  words.insert(words.begin(), "nvme-adaptctl");
  return ParseCommandLine(Commands(), static_cast<int>(words.size()), words.data(), out);
}

Result<Args> Parse(std::vector<const char*> words) {
  std::ostringstream out;
  CommandLine line = ParseLine(std::move(words), out);
  if (line.exit_now) return MakeError(ErrorCode::kInvalidArgument, "exit " + std::to_string(line.exit_code));
  return line.args;
}

TEST(CommandLine, OptionsAnywhereWithOrWithoutEquals) {
  auto args = Parse({"--json", "policy", "set", "--mode=adaptive", "--queue", "nvme0:q1", "--replace"});
  ASSERT_TRUE(args) << args.error().message;
  EXPECT_EQ(args->positional, (std::vector<std::string>{"policy", "set"}));
  EXPECT_TRUE(args->flag("json"));
  EXPECT_TRUE(args->flag("replace"));
  EXPECT_EQ(*args->value("mode"), "adaptive");
  auto kinds = Parse({"watch", "--kind", "decision", "--kind=override", "--addr", "/tmp/s"});
  ASSERT_TRUE(kinds) << kinds.error().message;
  EXPECT_EQ(kinds->all("kind"), (std::vector<std::string>{"decision", "override"}));
  EXPECT_EQ(*kinds->value("addr"), "/tmp/s");
  EXPECT_FALSE(Parse({"status", "--bogus"}));
  EXPECT_FALSE(Parse({"override", "--for"}));
  EXPECT_FALSE(Parse({"status", "--for", "5m"})) << "status takes no --for";
  EXPECT_FALSE(Parse({"frobnicate"}));
  EXPECT_FALSE(Parse({})) << "no command";
}

TEST(CommandLine, HelpEverywhereAndOutputFormats) {
  for (auto words : std::vector<std::vector<const char*>>{{"-h"}, {"--help"}, {"queues", "-h"}, {"policy", "set", "--help"}}) {
    std::ostringstream out;
    CommandLine line = ParseLine(words, out);
    EXPECT_TRUE(line.exit_now);
    EXPECT_EQ(line.exit_code, 0) << words[0];
    EXPECT_NE(out.str().find("Usage"), std::string::npos) << out.str();
  }
  std::ostringstream queues_help;
  ParseLine({"queues", "-h"}, queues_help);
  EXPECT_NE(queues_help.str().find("--controller"), std::string::npos) << queues_help.str();
  EXPECT_EQ(queues_help.str().find("--replace"), std::string::npos) << "queues -h shows policy set's options";
  std::ostringstream policy_help;
  ParseLine({"policy", "set", "-h"}, policy_help);
  EXPECT_NE(policy_help.str().find("--pace-slack"), std::string::npos) << policy_help.str();

  auto yaml = Parse({"queues", "-o", "yaml"});
  ASSERT_TRUE(yaml);
  EXPECT_EQ(OutputOf(*yaml), Output::kYaml);
  EXPECT_EQ(OutputOf(*Parse({"-o", "wide", "queues"})), Output::kWide);
  EXPECT_EQ(OutputOf(*Parse({"queues", "--json"})), Output::kJson);
  EXPECT_EQ(OutputOf(*Parse({"queues"})), Output::kTable);
  EXPECT_FALSE(Parse({"queues", "-o", "xml"}));
}

TEST(CommandLine, YamlCarriesTheJsonFields) {
  v1::ListQueuesResponse response;
  auto* q = response.add_queues();
  q->mutable_id()->set_controller("nvme0");
  q->mutable_id()->set_queue(1);
  q->add_cpus(2);
  q->add_cpus(3);
  q->set_ineligible_reason("a \"quoted\" reason");
  const std::string yaml = ToYaml(response);
  EXPECT_EQ(yaml.rfind("---\n\"queues\":\n  - \"id\":\n", 0), 0u) << yaml;
  EXPECT_NE(yaml.find("      \"controller\": \"nvme0\"\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("    \"cpus\":\n      - 2\n      - 3\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("\"ineligibleReason\": \"a \\\"quoted\\\" reason\""), std::string::npos) << yaml;
}

TEST(CommandLine, policy_profile_listed_and_selectable) {
  std::ostringstream out;
  CommandLine line = ParseLine({"policy", "profiles"}, out);
  ASSERT_FALSE(line.exit_now);
  ASSERT_NE(line.command->run_local, nullptr) << "policy profiles needs no agent";
  EXPECT_EQ(line.command->run_local(line.args, out), 0);
  for (const char* name : {"observe:", "patch:", "throughput:", "latency:"}) {
    EXPECT_NE(out.str().find(name), std::string::npos) << out.str();
  }
  EXPECT_NE(out.str().find("controller patch"), std::string::npos) << out.str();
  auto request = BuildSetPolicyRequest(*Parse({"policy", "set", "--controller", "nvme0", "--profile", "patch"}));
  ASSERT_TRUE(request) << request.error().message;
  EXPECT_EQ(request->policy().profile(), "patch");
  auto unknown = BuildSetPolicyRequest(*Parse({"policy", "set", "--profile", "fastest"}));
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("--profile: expected default, patch, observe, throughput, latency, got 'fastest'"), std::string::npos);
}

TEST(CommandLine, selector_policy_set_builds_the_request_and_explain_parses) {
  auto request = BuildSetPolicyRequest(*Parse({"policy", "set", "--selector", "pm1743", "--match",
                                               "model=SAMSUNG MZWLO*", "--match", "queues=1-4", "--mode", "poll"}));
  ASSERT_TRUE(request) << request.error().message;
  EXPECT_EQ(request->selector(), "pm1743");
  EXPECT_EQ(request->match().model(), "SAMSUNG MZWLO*");
  EXPECT_EQ(request->match().queues(), "1-4");
  EXPECT_EQ(request->policy().mode(), v1::CONTROLLER_MODE_POLL);
  auto remove = BuildSetPolicyRequest(*Parse({"policy", "set", "--selector", "pm1743", "--remove"}));
  ASSERT_TRUE(remove) << remove.error().message;
  EXPECT_TRUE(remove->remove());
  auto unknown = BuildSetPolicyRequest(*Parse({"policy", "set", "--selector", "x", "--match", "vendor=y"}));
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("--match: 'vendor': not a selector criterion"), std::string::npos)
      << unknown.error().message;
  auto lone = BuildSetPolicyRequest(*Parse({"policy", "set", "--match", "serial=S1", "--mode", "poll"}));
  ASSERT_FALSE(lone);
  EXPECT_EQ(lone.error().message, "--match and --remove need --selector NAME");
  auto both = BuildSetPolicyRequest(*Parse({"policy", "set", "--selector", "x", "--controller", "nvme0", "--mode", "poll"}));
  ASSERT_FALSE(both);
  EXPECT_TRUE(Parse({"policy", "explain", "nvme0:q1"}));
}

TEST(CommandLine, PolicySetBuildsTheRequest) {
  auto request = BuildSetPolicyRequest(*Parse({"policy", "set", "--controller", "nvme0", "--queue", "2", "--mode",
                                               "poll", "--poll-threshold", "12us", "--window-completions", "4096"}));
  ASSERT_TRUE(request) << request.error().message;
  EXPECT_EQ(request->controller(), "nvme0");
  EXPECT_EQ(request->queue(), 2u);
  EXPECT_EQ(request->policy().mode(), v1::CONTROLLER_MODE_POLL);
  EXPECT_EQ(request->policy().poll_threshold_ns(), 12'000);
  EXPECT_EQ(request->policy().window_completions(), 4096u);
  EXPECT_FALSE(request->policy().has_pace_slack_ns());
  EXPECT_FALSE(request->replace());

  auto by_name = BuildSetPolicyRequest(*Parse({"policy", "set", "--queue", "uvnvme:1:0:q3", "--max-failures", "2"}));
  ASSERT_TRUE(by_name);
  EXPECT_EQ(by_name->controller(), "uvnvme:1:0");
  EXPECT_EQ(by_name->queue(), 3u);

  EXPECT_EQ(BuildSetPolicyRequest(*Parse({"policy", "set"})).error().message,
            "policy set: give at least one field (e.g. --mode adaptive), --file, or --replace");
  EXPECT_EQ(BuildSetPolicyRequest(*Parse({"policy", "set", "--queue", "2", "--mode", "off"})).error().message,
            "--queue 2: needs --controller (or give --queue CONTROLLER:qN)");
  EXPECT_FALSE(BuildSetPolicyRequest(*Parse({"policy", "set", "--pace-slack", "20"})));
  EXPECT_TRUE(BuildSetPolicyRequest(*Parse({"policy", "set", "--replace"})));
}

TEST(CommandLine, BatchPaceAllowanceIsOnOrOff) {
  auto off = BuildSetPolicyRequest(*Parse({"policy", "set", "--batch-pace-allowance", "off"}));
  ASSERT_TRUE(off) << off.error().message;
  ASSERT_TRUE(off->policy().has_batch_pace_allowance());
  EXPECT_FALSE(off->policy().batch_pace_allowance());
  auto on = BuildSetPolicyRequest(*Parse({"policy", "set", "--batch-pace-allowance", "on"}));
  ASSERT_TRUE(on);
  EXPECT_TRUE(on->policy().batch_pace_allowance());
  EXPECT_EQ(BuildSetPolicyRequest(*Parse({"policy", "set", "--batch-pace-allowance", "yes"})).error().message,
            "--batch-pace-allowance: expected on or off, got 'yes'");
}

TEST(CommandLine, PatchPresetIsTheProfileOption) {
  auto patch = BuildSetPolicyRequest(*Parse({"policy", "set", "--profile", "patch"}));
  ASSERT_TRUE(patch) << patch.error().message;
  EXPECT_EQ(patch->policy().profile(), "patch");
  EXPECT_EQ(BuildSetPolicyRequest(*Parse({"policy", "set", "--profile", "fast"})).error().message,
            "--profile: expected default, patch, observe, throughput, latency, got 'fast'");
}

TEST(CommandLine, OverrideAndWatchBuildTheirRequests) {
  auto override_request = BuildSetQueueModeRequest(*Parse({"override", "uvnvme:1234:0:q2", "poll", "--for", "5m"}));
  ASSERT_TRUE(override_request) << override_request.error().message;
  EXPECT_EQ(override_request->queue().controller(), "uvnvme:1234:0");
  EXPECT_EQ(override_request->mode(), v1::REAP_MODE_POLL);
  EXPECT_EQ(override_request->duration_ns(), 300'000'000'000);
  EXPECT_FALSE(BuildSetQueueModeRequest(*Parse({"override", "nvme0:q1", "none", "--for", "5m"})));
  EXPECT_FALSE(Parse({"override", "nvme0:q1"})) << "MODE missing";

  auto watch = BuildWatchEventsRequest(*Parse({"watch", "--kind", "decision", "--kind", "override", "--source",
                                               "kernel", "--queue", "nvme0:q2"}));
  ASSERT_TRUE(watch) << watch.error().message;
  EXPECT_EQ(watch->kinds_size(), 2);
  EXPECT_EQ(watch->source(), v1::SOURCE_KERNEL);
  EXPECT_EQ(watch->controller(), "nvme0");
  EXPECT_EQ(watch->queue(), 2u);
}

TEST(CommandLine, PauseAndResumeBuildTheirRequests) {
  auto pause = BuildSetPauseRequest(*Parse({"pause", "--for", "1d12h", "--mode", "off"}));
  ASSERT_TRUE(pause) << pause.error().message;
  EXPECT_FALSE(pause->resume());
  EXPECT_EQ(pause->mode(), v1::CONTROLLER_MODE_OFF);
  EXPECT_EQ(pause->duration_ns(), 36LL * 3600 * 1'000'000'000);
  auto until_resumed = BuildSetPauseRequest(*Parse({"pause"}));
  ASSERT_TRUE(until_resumed);
  EXPECT_EQ(until_resumed->mode(), v1::CONTROLLER_MODE_INTERRUPT);
  EXPECT_EQ(until_resumed->duration_ns(), 0);
  auto poll = BuildSetPauseRequest(*Parse({"pause", "--mode", "poll"}));
  ASSERT_FALSE(poll);
  EXPECT_NE(poll.error().message.find("interrupt or off"), std::string::npos) << poll.error().message;
  EXPECT_FALSE(BuildSetPauseRequest(*Parse({"pause", "--for", "0"})));
  EXPECT_FALSE(BuildSetPauseRequest(*Parse({"pause", "--for", "soon"})));
  auto resume = BuildSetPauseRequest(*Parse({"resume"}));
  ASSERT_TRUE(resume);
  EXPECT_TRUE(resume->resume());
  EXPECT_FALSE(Parse({"resume", "--for", "5m"})) << "resume takes no options";
}

TEST(Tables, ColumnsLineUpAndInheritedFieldsShowADash) {
  v1::PolicySet policy;
  policy.mutable_policy()->set_mode(v1::CONTROLLER_MODE_ADAPTIVE);
  auto* queue = policy.add_queues();
  queue->set_controller("nvme0");
  queue->set_queue(2);
  queue->mutable_policy()->set_pace_slack_ns(5000);
  queue->mutable_policy()->set_batch_pace_allowance(false);
  queue->mutable_policy()->set_settle_windows(2);
  queue->mutable_policy()->set_pace_credit_ns(500'000);
  queue->mutable_policy()->set_backoff_load_change_percent(40);
  queue->mutable_policy()->set_max_poll_run_windows(512);
  queue->mutable_policy()->set_stall_backoff(false);
  queue->mutable_policy()->set_node_layer(true);
  queue->mutable_policy()->set_profile("patch");
  std::ostringstream out;
  PrintPolicySet(policy, nullptr, out);
  EXPECT_EQ(out.str(),
            "LEVEL           MODE      WINDOW  THRESHOLD  SLACK  MAX-FAILURES  BACKOFF  MAX-POLL  TIMER  BATCH  SETTLE  "
            "CREDIT  SLACK%  PAIR  MAX-BACKOFF  LOAD-CHANGE  MAX-POLL-RUN  STALL-BACKOFF  TRY-CLOCK-FIRST  NODE  PROFILE\n"
            "global          adaptive  -       -          -      -             -        -         -      -      -       "
            "-       -       -     -            -            -             -              -                -     -\n"
            "queue nvme0:q2  -         -       -          5us    -             -        -         -      off    2       "
            "500us   -       -     -            40%          512           off            -                on    patch\n");
  v1::Event event;
  event.set_sequence(7);
  event.set_time_unix_ns(1'700'000'000'123'000'000);
  event.set_kind(v1::EVENT_KIND_OVERRIDE);
  event.mutable_queue()->set_controller("nvme0");
  event.mutable_queue()->set_queue(1);
  event.set_message("override of nvme0:q1: REAP_MODE_POLL");
  event.set_missed(3);
  EXPECT_EQ(FormatEvent(event), "2023-11-14T22:13:20.123Z #7 override nvme0:q1 override of nvme0:q1: REAP_MODE_POLL "
                                "(missed 3 events before this one)");
}

}  // namespace
}  // namespace nvmeadapt::ctl
