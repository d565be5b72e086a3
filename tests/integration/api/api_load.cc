// SPDX-License-Identifier: Apache-2.0
// nvme-adapt-api-load: many WatchEvents streams (some that never read) and clients calling SetPolicy and
// ListQueues at once against a running agent, for a fixed time. It fails on any failed call, on a reading
// stream that went more than a few seconds without an event, and on the server's RSS passing a bound.
//
//   nvme-adapt-api-load --addr ADDRESS [--duration 30s] [--streams 100] [--stalled 20] [--clients 20]
//       [--client-interval 10ms] [--server-pid PID --rss-limit-mib N] [--check-stalled-missed]
//       [--json-out FILE] [TLS options of nvme-adaptctl: --ca --cert --key --token-file --insecure-loopback-tcp]
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>
#include <vector>

#include "agent/ctl/client.h"
#include "agent/ctl/values.h"
#include "nvmeadapt/v1/agent.grpc.pb.h"
#include "tests/integration/api/load_report.h"

namespace nvmeadapt::testing {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Usage(const std::string& problem) {
  std::cerr << "nvme-adapt-api-load: " << problem << " (see the comment at the top of api_load.cc)\n";
  std::exit(2);
}

LoadOptions ParseOptions(int argc, char** argv) {
  LoadOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--check-stalled-missed") { o.check_stalled_missed = true; continue; }
    if (flag == "--insecure-loopback-tcp") { o.client.insecure_loopback_tcp = true; continue; }
    if (i + 1 >= argc) Usage(flag + " needs a value");
    const std::string value = argv[++i];
    auto number = [&] {
      auto n = ctl::ParseUint32(value);
      if (!n) Usage(flag + ": " + n.error().message);
      return *n;
    };
    auto duration = [&] {
      auto d = nvmeadapt::ParseDuration(value);
      if (!d) Usage(flag + ": " + d.error().message);
      return std::chrono::nanoseconds(*d);
    };
    if (flag == "--addr") o.client.address = value;
    else if (flag == "--ca") o.client.ca_file = value;
    else if (flag == "--cert") o.client.cert_file = value;
    else if (flag == "--key") o.client.key_file = value;
    else if (flag == "--token-file") o.client.token_file = value;
    else if (flag == "--duration") o.duration = duration();
    else if (flag == "--client-interval") o.client_interval = duration();
    else if (flag == "--streams") o.streams = number();
    else if (flag == "--stalled") o.stalled = number();
    else if (flag == "--clients") o.clients = number();
    else if (flag == "--server-pid") o.server_pid = static_cast<int>(number());
    else if (flag == "--rss-limit-mib") o.rss_limit_mib = number();
    else if (flag == "--json-out") o.json_out = value;
    else Usage("unknown option " + flag);
  }
  if (o.stalled > o.streams) Usage("--stalled must not exceed --streams");
  return o;
}

// VmRSS of `pid` in KiB, 0 when it cannot be read.
uint64_t RssKib(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10);
  }
  return 0;
}

class LoadRun {
 public:
  LoadRun(const LoadOptions& options, const ctl::AgentClient& client, const ctl::AgentClient& stalled_client)
      : o_(options), client_(client), stub_(v1::AgentService::NewStub(client.channel())),
        stalled_stub_(v1::AgentService::NewStub(stalled_client.channel())),
        seconds_(static_cast<size_t>(std::chrono::duration_cast<std::chrono::seconds>(o_.duration).count()) + 2) {}

  LoadResult Run() {
    std::vector<std::thread> threads;
    std::vector<std::unique_ptr<grpc::ClientContext>> stream_contexts(o_.streams);
    std::vector<std::vector<uint32_t>> per_second(o_.streams - o_.stalled, std::vector<uint32_t>(seconds_, 0));
    std::vector<std::unique_ptr<grpc::ClientReader<v1::Event>>> stalled(o_.stalled);
    for (uint32_t i = 0; i < o_.streams; ++i) stream_contexts[i] = client_.NewContext(/*streaming=*/true);
    for (uint32_t i = 0; i < o_.stalled; ++i) {
      stalled[i] = stalled_stub_->WatchEvents(stream_contexts[i].get(), {});
      stalled[i]->WaitForInitialMetadata();
    }
    start_ = Clock::now();
    for (uint32_t i = o_.stalled; i < o_.streams; ++i) {
      threads.emplace_back([&, i] { ReadStream(*stream_contexts[i], per_second[i - o_.stalled]); });
    }
    for (uint32_t i = 0; i < o_.clients; ++i) threads.emplace_back([&, i] { CallLoop(i); });
    threads.emplace_back([&] { SampleRss(); });

    std::this_thread::sleep_until(start_ + o_.duration);
    stop_.store(true);
    for (uint32_t i = o_.stalled; i < o_.streams; ++i) stream_contexts[i]->TryCancel();
    for (auto& t : threads) t.join();

    // The streams that never read: each must now learn how many events it lost. What it still gets
    // first is what gRPC had buffered before the drops; the drop count comes with the next event.
    const auto drain_until = Clock::now() + std::chrono::seconds(10);
    for (uint32_t i = 0; i < o_.stalled; ++i) {
      v1::Event event;
      uint64_t missed = 0;
      while (missed == 0 && Clock::now() < drain_until && stalled[i]->Read(&event)) missed += event.missed();
      result_.stalled_missed.push_back(missed);
      stream_contexts[i]->TryCancel();
      stalled[i]->Finish().IgnoreError();
    }
    result_.reader_events_per_second = std::move(per_second);
    result_.reader_missed = missed_by_readers_.load();
    result_.elapsed_s = std::chrono::duration<double>(Clock::now() - start_).count();
    return std::move(result_);
  }

 private:
  void ReadStream(grpc::ClientContext& context, std::vector<uint32_t>& per_second) {
    auto reader = stub_->WatchEvents(&context, {});
    v1::Event event;
    uint64_t last_sequence = 0;
    while (reader->Read(&event)) {
      const size_t second = static_cast<size_t>(std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - start_).count());
      if (second < per_second.size()) ++per_second[second];
      if (event.sequence() <= last_sequence) Note("stream: sequence went from " + std::to_string(last_sequence) + " to " + std::to_string(event.sequence()));
      last_sequence = event.sequence();
      missed_by_readers_.fetch_add(event.missed());
    }
    const grpc::Status status = reader->Finish();
    if (!stop_.load()) Note("a reading stream ended early: " + std::string(status.error_message()));
  }

  void CallLoop(uint32_t client) {
    for (uint64_t n = 0; !stop_.load(); ++n) {
      v1::SetPolicyRequest set;
      set.mutable_policy()->set_window_completions(4096 + static_cast<uint32_t>((client * 7 + n) % 64));
      v1::SetPolicyResponse set_reply;
      Timed([&] { return stub_->SetPolicy(client_.NewContext().get(), set, &set_reply); }, "SetPolicy");
      v1::ListQueuesResponse list_reply;
      Timed([&] { return stub_->ListQueues(client_.NewContext().get(), {}, &list_reply); }, "ListQueues");
      std::this_thread::sleep_for(o_.client_interval);
    }
  }

  template <class Call>
  void Timed(Call call, const char* method) {
    const auto before = Clock::now();
    const grpc::Status status = call();
    const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - before).count();
    std::lock_guard lock(mutex_);
    result_.unary_latencies_ns.push_back(ns);
    if (!status.ok()) {
      ++result_.unary_failed;
      if (result_.unary_failed <= 5) result_.problems.push_back(std::string(method) + ": " + status.error_message());
    }
  }

  void SampleRss() {
    if (o_.server_pid <= 0) return;
    while (!stop_.load()) {
      const uint64_t kib = RssKib(o_.server_pid);
      {
        std::lock_guard lock(mutex_);
        result_.rss_max_kib = std::max(result_.rss_max_kib, kib);
        if (result_.rss_first_kib == 0) result_.rss_first_kib = kib;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  }

  void Note(std::string problem) {
    std::lock_guard lock(mutex_);
    ++result_.stream_failures;
    if (result_.problems.size() < 20) result_.problems.push_back(std::move(problem));
  }

  const LoadOptions& o_;
  const ctl::AgentClient& client_;
  std::unique_ptr<v1::AgentService::Stub> stub_;
  std::unique_ptr<v1::AgentService::Stub> stalled_stub_;
  const size_t seconds_;
  Clock::time_point start_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> missed_by_readers_{0};
  std::mutex mutex_;
  LoadResult result_;
};

int Main(int argc, char** argv) {
  const LoadOptions options = ParseOptions(argc, argv);
  auto client = ctl::AgentClient::Create(options.client);
  if (!client) Usage(client.error().message);
  // The streams that never read get a connection of their own with a fixed 64 KiB receive window, as a
  // slow client on a slow link would have; on the shared connection gRPC grows the window to megabytes
  // (BDP probing) and the stream would need far more events before the agent had to drop any.
  ctl::ClientOptions stalled_options = options.client;
  stalled_options.channel_arguments = {{"grpc.http2.bdp_probe", 0}};
  auto stalled_client = ctl::AgentClient::Create(stalled_options);
  if (!stalled_client) Usage(stalled_client.error().message);
  LoadRun run(options, *client, *stalled_client);
  LoadResult result = run.Run();
  return ReportLoad(options, result, std::cout);
}

}  // namespace
}  // namespace nvmeadapt::testing

int main(int argc, char** argv) { return nvmeadapt::testing::Main(argc, argv); }
