// SPDX-License-Identifier: Apache-2.0
// nvme-adapt-fake-agent: the API server in front of the FakeAgent, for the CLI and load tests until the
// daemon exists. With --publish-rate it publishes decision events at a steady rate and measures how long
// each Publish takes (the daemon's loop thread must never wait for a slow WatchEvents client).
//
//   nvme-adapt-fake-agent [--config FILE] [--unix PATH] [--group NAME] [--state-file FILE]
//                         [--publish-rate PER_SECOND] [--stats-file FILE] [--max-publish-p99-us N]
#include <google/protobuf/util/json_util.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>
#include <vector>

#include "agent/api/server.h"
#include "agent/config/config_file.h"
#include "common/files.h"
#include "common/log.h"
#include "tests/integration/api/fake_agent.h"

namespace nvmeadapt::testing {
namespace {

struct Options {
  std::string config_file;
  std::string unix_socket;
  std::string group;
  std::string state_file;
  double publish_rate = 0;
  std::string stats_file;
  int64_t max_publish_p99_us = 0;
};

[[noreturn]] void Usage(const std::string& problem) {
  std::cerr << "nvme-adapt-fake-agent: " << problem << "\n"
            << "usage: nvme-adapt-fake-agent [--config FILE] [--unix PATH] [--group NAME] [--state-file FILE]\n"
            << "         [--publish-rate PER_SECOND] [--stats-file FILE] [--max-publish-p99-us N]\n";
  std::exit(2);
}

Options ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) Usage(flag + ": needs a value");
    const std::string value = argv[++i];
    if (flag == "--config") o.config_file = value;
    else if (flag == "--unix") o.unix_socket = value;
    else if (flag == "--group") o.group = value;
    else if (flag == "--state-file") o.state_file = value;
    else if (flag == "--publish-rate") o.publish_rate = std::atof(value.c_str());
    else if (flag == "--stats-file") o.stats_file = value;
    else if (flag == "--max-publish-p99-us") o.max_publish_p99_us = std::atoll(value.c_str());
    else Usage("unknown option " + flag);
  }
  return o;
}

// Publishes on a fixed schedule (tick i at start + i / rate) and keeps every Publish duration.
class SteadyPublisher {
 public:
  SteadyPublisher(FakeAgent& agent, double rate) : agent_(agent), rate_(rate) {}

  void Run(const std::atomic<bool>& stop) {
    const auto period = std::chrono::nanoseconds(static_cast<int64_t>(1e9 / rate_));
    const auto start = std::chrono::steady_clock::now();
    latencies_ns_.reserve(static_cast<size_t>(rate_ * 600));
    for (uint64_t tick = 0; !stop.load(); ++tick) {
      std::this_thread::sleep_until(start + period * tick);
      const auto before = std::chrono::steady_clock::now();
      agent_.PublishDecision(tick);
      const auto after = std::chrono::steady_clock::now();
      latencies_ns_.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(after - before).count());
    }
    elapsed_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  std::vector<int64_t>& latencies() { return latencies_ns_; }
  double elapsed_s() const { return elapsed_s_; }
  double rate() const { return rate_; }

 private:
  FakeAgent& agent_;
  const double rate_;
  std::vector<int64_t> latencies_ns_;
  double elapsed_s_ = 0;
};

int64_t Percentile(std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t index = std::min(sorted.size() - 1, static_cast<size_t>(p * static_cast<double>(sorted.size())));
  return sorted[index];
}

// Prints the figures, writes them as JSON, and judges the p99 bound. Returns the exit code.
int Report(SteadyPublisher& publisher, const Options& o) {
  auto& l = publisher.latencies();
  std::sort(l.begin(), l.end());
  const int64_t p50 = Percentile(l, 0.50), p99 = Percentile(l, 0.99), max = l.empty() ? 0 : l.back();
  const double expected = publisher.elapsed_s() * publisher.rate();
  char json[512];
  std::snprintf(json, sizeof json,
                "{\"published\": %zu, \"expected\": %.0f, \"elapsed_s\": %.2f, \"publish_p50_ns\": %lld, "
                "\"publish_p99_ns\": %lld, \"publish_max_ns\": %lld}",
                l.size(), expected, publisher.elapsed_s(), static_cast<long long>(p50), static_cast<long long>(p99),
                static_cast<long long>(max));
  std::cout << "fake-agent publisher: " << json << std::endl;
  if (!o.stats_file.empty()) {
    if (Status written = WriteFileAtomically(o.stats_file, std::string(json) + "\n", 0644); !written) {
      std::cerr << "nvme-adapt-fake-agent: " << written.error().message << "\n";
      return 1;
    }
  }
  int rc = 0;
  if (o.max_publish_p99_us > 0 && p99 > o.max_publish_p99_us * 1000) {
    std::cerr << "nvme-adapt-fake-agent: FAIL: publish p99 " << p99 / 1000 << " us > bound " << o.max_publish_p99_us
              << " us\n";
    rc = 1;
  }
  // Falling more than 5 % behind the schedule would mean the publisher was held up.
  if (static_cast<double>(l.size()) < 0.95 * expected) {
    std::cerr << "nvme-adapt-fake-agent: FAIL: published " << l.size() << " of " << expected << " scheduled\n";
    rc = 1;
  }
  return rc;
}

int Main(int argc, char** argv) {
  const Options o = ParseOptions(argc, argv);
  v1::Config config;
  if (!o.config_file.empty()) {
    auto loaded = config::LoadConfigFile(o.config_file);
    if (!loaded) {
      std::cerr << "nvme-adapt-fake-agent: " << loaded.error().message << "\n";
      return 2;
    }
    config = *loaded;
  }
  if (!o.unix_socket.empty()) config.mutable_api()->set_unix_socket(o.unix_socket);
  if (!o.group.empty()) config.mutable_api()->set_unix_socket_group(o.group);

  // Signals are taken by sigwait below; every thread started from here inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  FakeAgent agent(o.state_file.empty() ? std::nullopt : std::optional<std::string>(o.state_file));
  auto server = api::StartApiServer(config.api(), agent, nullptr);
  if (!server) {
    std::cerr << "nvme-adapt-fake-agent: " << server.error().message << "\n";
    return 1;
  }
  std::cout << "ready unix=" << (*server)->unix_socket().value_or("-") << " tcp_port=" << (*server)->tcp_port()
            << std::endl;

  std::atomic<bool> stop{false};
  std::optional<SteadyPublisher> publisher;
  std::thread publishing;
  if (o.publish_rate > 0) {
    publisher.emplace(agent, o.publish_rate);
    publishing = std::thread([&] { publisher->Run(stop); });
  }
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  stop.store(true);
  if (publishing.joinable()) publishing.join();
  const auto before_shutdown = std::chrono::steady_clock::now();
  (*server)->Shutdown();
  std::cout << "fake-agent: shutdown took "
            << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                     before_shutdown).count()
            << " ms" << std::endl;
  return publisher ? Report(*publisher, o) : 0;
}

}  // namespace
}  // namespace nvmeadapt::testing

int main(int argc, char** argv) { return nvmeadapt::testing::Main(argc, argv); }
