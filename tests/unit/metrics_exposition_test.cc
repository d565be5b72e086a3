// SPDX-License-Identifier: Apache-2.0
// What /metrics really serves, scraped over HTTP from one AgentMetrics on a free loopback port (one per
// suite: the exposer's destructor takes about 2 s), checked against docs/metrics.md, the dashboard and the
// rules, and by promtool.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "agent/metrics/agent_metrics.h"
#include "common/files.h"
#include "tests/unit/metrics_docs.h"
#include "tests/unit/metrics_text_parser.h"

namespace nvmeadapt::metrics {
namespace {

namespace fs = std::filesystem;
using testing::DocumentedFamilies;
using testing::Exposition;
using testing::NameTokens;

const fs::path kSourceDir = NVME_ADAPT_SOURCE_DIR;

struct CommandResult {
  int exit_code = -1;
  std::string output;
};

CommandResult RunCommand(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) result.output.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// promtool comes with Debian's prometheus package; without it these tests fail and say so.
bool HavePromtool() { return RunCommand("promtool --version").exit_code == 0; }
constexpr const char* kNoPromtool = "promtool not found: install Debian package 'prometheus' (scripts/install-deps)";

// GET http://127.0.0.1:port/path over HTTP/1.0; returns the body of a 200 answer.
Result<std::string> HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return SysError("socket", "AF_INET", errno);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const std::string where = "127.0.0.1:" + std::to_string(port);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    const int err = errno;
    close(fd);
    return SysError("connect", where, err);
  }
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: " + where + "\r\n\r\n";
  std::string response;
  bool sent = send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size());
  char buffer[16384];
  for (ssize_t n; sent && (n = recv(fd, buffer, sizeof buffer, 0)) > 0;) response.append(buffer, static_cast<size_t>(n));
  close(fd);
  const size_t body = response.find("\r\n\r\n");
  if (!sent || body == std::string::npos || response.find(" 200 ") > response.find("\r\n")) {
    return MakeError(ErrorCode::kIo, "GET " + where + path + ": bad answer: " + response.substr(0, 200));
  }
  return response.substr(body + 4);
}

std::string ReadSource(const fs::path& relative) {
  auto text = ReadWholeFile((kSourceDir / relative).string());
  EXPECT_TRUE(text) << text.error().message;
  return text ? *text : std::string();
}

std::vector<fs::path> RuleFiles() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(kSourceDir / "dashboards/prometheus")) {
    if (entry.path().extension() == ".yml") files.push_back(entry.path());
  }
  return files;
}

class MetricsExposition : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    metrics_ = new AgentMetrics(8);
    metrics_->ExportPerQueueIntervalHistogram(true);  // the option's family is documented and checked too
    start_status_ = new Status(metrics_->Start("127.0.0.1:0"));
    // One queue with every kind of update, so that every family has a series.
    const QueueId queue = metrics_->AddQueue({"kernel", "nvme0", 1}, true);
    collect::QueueCounters counters;
    counters.completions = 8192;
    counters.bytes = 8192 * 4096;
    counters.interrupt_completions = 8000;
    counters.poll_completions = 192;
    counters.interrupts = 1000;
    counters.abandoned_completions = 3;
    counters.pace_miss_retries = 1;
    counters.wakeups = 1000;
    counters.interval_histogram[12] = 8192;
    metrics_->SetPollThreshold(queue, 10'000);
    metrics_->UpdateQueue(queue, counters, ReapMode::kPoll);
    metrics_->OnWindow(queue, 5'000);
    metrics_->OnSwitch(queue, engine::Reason::kWindowFast);
    metrics_->OnPollTry(queue, PollTryResult::kSuccess);
    engine::QueuePayoff payoff;  // a kept and a failed polling window, and shadow windows both ways
    payoff.judged_windows = 2;
    payoff.kept_windows = 1;
    payoff.last_kept_speedup = 1.25;
    payoff.polled_completions = 8192;
    payoff.completions_gained = 819.2;
    payoff.polling_time = 40'000'000;
    payoff.failed_polling_time = 1'000'000;
    payoff.shadow_windows = {3, 1};
    payoff.shadow_completions = {3 * 8192, 8192};
    metrics_->SetPayoff(queue, payoff, 0.04);
    metrics_->OnLeverError("driver_socket", ErrorCode::kUnavailable);
    metrics_->SetPolicyInfo("api", "0123456789abcdef", 1.7e9);  // set over the API: the drift gauge too
    metrics_->SetPause(std::pair<std::string, double>("interrupt", 1.8e9));  // a timed pause: its end's gauge too
    metrics_->OnSwitchLatency("driver_socket", 300'000);
    collect::CollectorStats stats;
    stats.ringbuf_drops = 1;
    stats.records = 10;
    stats.programs.push_back({"tp_btf/nvme_sq", 8192, 400'000});
    metrics_->SetCollector("bpf", stats);
    metrics_->OnGrpcRequest("/nvmeadapt.v1.Agent/GetStatus", 0);
    NodeSeries node;  // every node family served: budget and pressure are absent without a figure
    node.deferred[static_cast<size_t>(engine::NodeReason::kCpuBusy)] = 3;
    node.ended[static_cast<size_t>(engine::NodeReason::kCpuPressure)] = 1;
    node.polling_cores = 1;
    node.budget_cores = 2;
    node.pressure_some_avg10 = 1.5;
    node.pressure_full_avg10 = 0.25;
    node.decided_queues = 1;
    metrics_->SetNode(node);
  }
  static void TearDownTestSuite() {
    delete metrics_;
    delete start_status_;
  }

  void SetUp() override { ASSERT_TRUE(*start_status_) << start_status_->error().message; }

  static std::string ScrapeText() {
    auto body = HttpGet(metrics_->port(), "/metrics");
    EXPECT_TRUE(body) << body.error().message;
    return body ? *body : std::string();
  }
  static Exposition Scrape() {
    std::string error;
    auto parsed = testing::ParseExposition(ScrapeText(), &error);
    EXPECT_TRUE(parsed) << error;
    return parsed.value_or(Exposition{});
  }

  static AgentMetrics* metrics_;
  static Status* start_status_;
};

AgentMetrics* MetricsExposition::metrics_ = nullptr;
Status* MetricsExposition::start_status_ = nullptr;

std::string Join(const std::set<std::string>& words) {
  std::string out;
  for (const auto& word : words) out += (out.empty() ? "" : ", ") + word;
  return out.empty() ? "(none)" : out;
}

TEST_F(MetricsExposition, TheDocsListExactlyTheServedFamiliesWithTheirTypesAndLabels) {
  const auto served = Scrape().families;
  const auto documented = DocumentedFamilies(ReadSource("docs/metrics.md"));
  ASSERT_FALSE(documented.empty()) << "no metric table found in docs/metrics.md";
  for (const auto& [name, shape] : served) {
    auto it = documented.find(name);
    if (it == documented.end()) {
      ADD_FAILURE() << "served but not in docs/metrics.md: " << name << " (" << shape.type << "; "
                    << Join(shape.labels) << ")";
      continue;
    }
    EXPECT_EQ(it->second.type, shape.type) << name;
    EXPECT_EQ(Join(it->second.labels), Join(shape.labels)) << name << ": labels in docs vs served";
  }
  for (const auto& [name, shape] : documented) {
    EXPECT_TRUE(served.count(name)) << "in docs/metrics.md but not served: " << name;
  }
}

// The alert rules may name a planned metric (docs/metrics.md, "Planned") before the agent serves it; the
// dashboard and the recording rules may not.
TEST_F(MetricsExposition, TheDashboardAndTheRulesUseOnlyServedOrRecordedNames) {
  const auto served = Scrape().families;
  const auto planned = DocumentedFamilies(ReadSource("docs/metrics.md"), "planned metric");
  std::vector<std::pair<fs::path, std::string>> files;
  for (const auto& path : RuleFiles()) files.emplace_back(path, ReadSource(fs::relative(path, kSourceDir)));
  for (const auto& entry : fs::directory_iterator(kSourceDir / "dashboards/grafana")) {
    files.emplace_back(entry.path(), ReadSource(fs::relative(entry.path(), kSourceDir)));
  }
  std::set<std::string> recorded;
  for (const auto& [path, text] : files) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      const size_t at = line.find("- record: ");
      if (at != std::string::npos) recorded.insert(line.substr(at + 10));
    }
  }
  ASSERT_FALSE(recorded.empty()) << "no recording rule found under dashboards/prometheus";
  size_t checked = 0;
  for (const auto& [path, text] : files) {
    for (const std::string& token : NameTokens(text)) {
      if (token.starts_with("nvme_adapt:")) {
        EXPECT_TRUE(recorded.count(token)) << path << ": " << token << " is no recording rule";
        ++checked;
        continue;
      }
      if (token.find(':') != std::string::npos ||
          !(token.starts_with("nvme_adapt_") || token.starts_with("process_"))) {
        continue;
      }
      std::string family = token;
      for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
        const std::string base = token.substr(0, token.size() - std::min(token.size(), suffix.size()));
        if (token.ends_with(suffix) && served.count(base) &&
            (served.at(base).type == "histogram" || served.at(base).type == "summary")) {
          family = base;
        }
      }
      // The alerts, and their promtool tests, which feed them the planned series.
      const bool alerts = path.filename() == "nvme-adapt-alerts.rules.yml" || path.parent_path().filename() == "tests";
      EXPECT_TRUE(served.count(family) || (alerts && planned.count(family)))
          << path << ": " << token << " is not served" << (planned.count(family) ? " (planned: alerts only)" : "");
      ++checked;
    }
  }
  EXPECT_GT(checked, 0u);
}

TEST_F(MetricsExposition, APlannedMetricIsNotServedYetAndHasAnAlert) {
  const auto served = Scrape().families;
  // None is planned now (the alerts' two are served since issue 46); a table of them comes back with the next.
  const auto planned = DocumentedFamilies(ReadSource("docs/metrics.md"), "planned metric");
  const std::string alerts = ReadSource("dashboards/prometheus/nvme-adapt-alerts.rules.yml");
  for (const auto& [name, shape] : planned) {
    EXPECT_FALSE(served.count(name)) << name << " is served now: move it from \"Planned\" to its table";
    EXPECT_NE(alerts.find(name), std::string::npos) << name << " is planned for an alert that does not use it";
  }
}

TEST_F(MetricsExposition, PromtoolAcceptsTheLiveScrape) {
  ASSERT_TRUE(HavePromtool()) << kNoPromtool;
  const fs::path file = fs::temp_directory_path() / ("metrics-scrape-" + std::to_string(getpid()) + ".txt");
  std::ofstream(file) << ScrapeText();
  const CommandResult check = RunCommand("promtool check metrics < " + file.string());
  fs::remove(file);
  EXPECT_EQ(check.exit_code, 0) << check.output;
}

TEST_F(MetricsExposition, PromtoolAcceptsTheRulesAndTheirTestsPass) {
  ASSERT_TRUE(HavePromtool()) << kNoPromtool;
  std::string rule_files, test_files;
  for (const auto& path : RuleFiles()) {
    (path.parent_path().filename() == "tests" ? test_files : rule_files) += " " + path.string();
  }
  ASSERT_FALSE(rule_files.empty());
  ASSERT_FALSE(test_files.empty()) << "no promtool rule tests under dashboards/prometheus/tests";
  const CommandResult check = RunCommand("promtool check rules" + rule_files);
  EXPECT_EQ(check.exit_code, 0) << check.output;
  const CommandResult test = RunCommand("promtool test rules" + test_files);
  EXPECT_EQ(test.exit_code, 0) << test.output;
}

TEST_F(MetricsExposition, StartingTwiceOrOnABusyPortFailsWithTheAddress) {
  const Status again = metrics_->Start("127.0.0.1:0");
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ErrorCode::kFailedPrecondition);

  AgentMetrics other;
  const std::string busy = "127.0.0.1:" + std::to_string(metrics_->port());
  const Status status = other.Start(busy);
  ASSERT_FALSE(status);
  EXPECT_NE(status.error().message.find(busy), std::string::npos) << status.error().message;
  EXPECT_NE(status.error().message.find("bind"), std::string::npos) << "says why: " << status.error().message;
  EXPECT_EQ(other.port(), 0);
}

}  // namespace
}  // namespace nvmeadapt::metrics
