// SPDX-License-Identifier: Apache-2.0
// uvnvme-load's placement of its ordinary threads: with --controller-cpus and --host-cpus, every thread that
// is not an emulated device thread (the main thread, the control server, the reapers) may run on the host
// CPUs only, and the device threads on the device CPUs only. Read back from /proc/self/task/*/status, as the
// scheduler sees it, while a load runs with the control socket up (uvnvme-load's main sequence).
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "uvnvme/control_server.h"
#include "uvnvme/driver.h"
#include "uvnvme/load/options.h"
#include "uvnvme/load/runner.h"

namespace nvmeadapt::uvnvme {
namespace {

struct TaskInfo {
  std::string name;
  std::string allowed;  // Cpus_allowed_list, e.g. "0" or "0-1"
  int policy = -1;      // SCHED_OTHER, SCHED_BATCH, SCHED_FIFO, ...
};

std::map<long, TaskInfo> Tasks() {
  std::map<long, TaskInfo> tasks;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    TaskInfo info;
    std::ifstream comm(entry.path() / "comm");
    std::getline(comm, info.name);
    std::ifstream status(entry.path() / "status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("Cpus_allowed_list:", 0) == 0) info.allowed = line.substr(line.find_first_not_of(" \t", 18));
    }
    const long tid = std::stol(entry.path().filename());
    info.policy = sched_getscheduler(static_cast<pid_t>(tid));
    if (!info.name.empty()) tasks[tid] = info;
  }
  return tasks;
}

// Puts the calling thread's affinity back, whatever the test did to it.
class AffinityGuard {
 public:
  AffinityGuard() { sched_getaffinity(0, sizeof saved_, &saved_); }
  ~AffinityGuard() { sched_setaffinity(0, sizeof saved_, &saved_); }

 private:
  cpu_set_t saved_{};
};

TEST(UvnvmeAffinity, NonDeviceThreadsRunOnTheHostCpusOnly) {
  cpu_set_t mask;
  ASSERT_EQ(sched_getaffinity(0, sizeof mask, &mask), 0);
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &mask)) cpus.push_back(cpu);
  }
  ASSERT_GE(cpus.size(), 2u) << "this test needs two CPUs (one for the host threads, one for the device)";
  const std::string host = std::to_string(cpus.front()), device = std::to_string(cpus.back());

  char pattern[] = "/tmp/uvnvme-affinity-test.XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string runtime_dir = pattern;
  const std::vector<std::string_view> args{"--queues", "2", "--phases", "600ms:qd4", "--device-clock", "sleeping",
                                           "--controller-cpus", device, "--host-cpus", host,
                                           "--runtime-dir", runtime_dir};
  auto options = load::ParseLoadOptions(args);
  ASSERT_TRUE(options) << options.error().message;
  EXPECT_EQ(load::NonDeviceCpus(*options), std::vector<int>{cpus.front()});

  // Threads that are not the load's: gtest's and the observer below (started before the pinning).
  std::set<long> foreign;
  for (const auto& [tid, info] : Tasks()) foreign.insert(tid);
  std::atomic<bool> socket_up{false};
  std::map<long, TaskInfo> seen;
  std::atomic<long> observer_tid{0};
  std::thread observer([&] {
    observer_tid = static_cast<long>(syscall(SYS_gettid));
    while (!socket_up.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // mid-run: every thread is up
    seen = Tasks();
  });
  while (observer_tid.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  foreign.insert(observer_tid.load());
  foreign.erase(static_cast<long>(syscall(SYS_gettid)));  // this thread plays uvnvme-load's main thread

  {
    AffinityGuard guard;
    // uvnvme-load's main(): pin early, then the driver, the control socket and the run.
    ASSERT_TRUE(load::PinToNonDeviceCpus(*options, "main thread"));
    auto driver = Driver::Create(options->driver);
    ASSERT_TRUE(driver) << driver.error().message;
    ASSERT_TRUE((*driver)->Start());
    auto server = ControlServer::Start(runtime_dir, **driver, load::NonDeviceCpus(*options));
    ASSERT_TRUE(server) << server.error().message;
    socket_up = true;
    auto result = load::RunLoad(*options, **driver, nullptr);
    observer.join();
    ASSERT_TRUE(result) << result.error().message;
    server->reset();
    (*driver)->Stop();
  }
  std::filesystem::remove_all(runtime_dir);

  const std::regex device_thread("uvnvme-c[0-9]+t[0-9]+");
  int device_threads = 0, others = 0;
  std::set<std::string> names;
  for (const auto& [tid, info] : seen) {
    if (foreign.count(tid)) continue;
    names.insert(info.name);
    if (std::regex_match(info.name, device_thread)) {
      ++device_threads;
      EXPECT_EQ(info.allowed, device) << "device thread " << info.name << " (tid " << tid << ")";
    } else {
      ++others;
      EXPECT_EQ(info.allowed, host) << "non-device thread " << info.name << " (tid " << tid << ")";
    }
  }
  EXPECT_EQ(device_threads, 1);
  EXPECT_EQ(others, 4);  // the main thread, the control server, two reapers
  EXPECT_TRUE(names.count("uvnvme-control")) << "the control server thread was not seen";
  for (const auto& [tid, info] : seen) {
    if (info.name == "uvnvme-control") {
      EXPECT_EQ(info.policy, SCHED_BATCH) << "the control plane preempts no reaper";
    }
  }
}

TEST(UvnvmeAffinity, NothingIsPinnedWithoutBothCpuLists) {
  auto options = load::ParseLoadOptions(std::vector<std::string_view>{"--host-cpus", "0"});
  ASSERT_TRUE(options) << options.error().message;
  EXPECT_TRUE(load::NonDeviceCpus(*options).empty());  // the reapers still go to --host-cpus, as asked
}

}  // namespace
}  // namespace nvmeadapt::uvnvme
