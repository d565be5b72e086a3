// SPDX-License-Identifier: Apache-2.0
// The reconnect lever's test fixture: a temporary sysfs tree with an NVMe/TCP host and a fake libnvme connector.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/actuate/reconnect_lever.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::actuate {

using nvmeadapt::testing::TempDir;
using nvmeadapt::testing::WriteFile;
using Argv = std::vector<std::string>;
using Steps = std::vector<RestoreStep>;

inline constexpr char kName[] = "tcp:127.0.0.1:4420/nqn.2026-12.io.nvme-adapt:fabrics";
inline const Argv kConnect{"nvme", "connect", "--transport=tcp", "--traddr=127.0.0.1", "--trsvcid=4420",
                           "--nqn=nqn.2026-12.io.nvme-adapt:fabrics", "--hostnqn=nqn.2014-08.org.nvmexpress:uuid:h1",
                           "--hostid=h1"};

inline Argv With(Argv argv, const std::string& arg) {
  argv.push_back(arg);
  return argv;
}

// Records every call in nvme-cli's words ({"nvme", "disconnect", "--device=nvme1"}, {"nvme", "connect", options...,
// "--nr-poll-queues=N"} with N > 0, as `nvme connect` would be given them); answers with `answer` (success by
// default), which can change the tree as the kernel would.
class FakeCli final : public FabricsConnector {
 public:
  Status Connect(const Argv& options, uint32_t poll_queues) override {
    Argv argv{"nvme", "connect"};
    argv.insert(argv.end(), options.begin(), options.end());
    if (poll_queues > 0) argv.push_back("--nr-poll-queues=" + std::to_string(poll_queues));
    return Answer(std::move(argv));
  }
  Status Disconnect(const std::string& controller) override {
    return Answer({"nvme", "disconnect", "--device=" + controller});
  }
  std::vector<Argv> calls;
  std::function<Status(const Argv&)> answer;

 private:
  Status Answer(Argv argv) {
    calls.push_back(argv);
    return answer ? answer(argv) : OkStatus();
  }
};

class Reconnect : public ::testing::Test {
 protected:
  Reconnect() {
    WriteFile(tmp_ / "sys/devices/system/cpu/online", "0-1\n");
    Controller("nvme1", "tcp", 0);
  }
  // A TCP host controller with `polls` poll queues after two default ones (one per CPU).
  void Controller(const std::string& name, const std::string& transport, uint32_t polls) {
    const std::string dir = tmp_ / ("sys/class/nvme/" + name);
    WriteFile(dir + "/transport", transport + "\n");
    WriteFile(dir + "/subsysnqn", "nqn.2026-12.io.nvme-adapt:fabrics\n");
    WriteFile(dir + "/address", "traddr=127.0.0.1,trsvcid=4420,src_addr=127.0.0.1\n");
    WriteFile(dir + "/hostnqn", "nqn.2014-08.org.nvmexpress:uuid:h1\n");
    WriteFile(dir + "/hostid", "h1\n");
    WriteFile(dir + "/queue_count", std::to_string(3 + polls) + "\n");
    WriteFile(dir + "/" + name + "c1n1/queue/io_poll", polls > 0 ? "1\n" : "0\n");
  }
  // The fake's connect makes nvme1 with the poll queues asked for, as nvme_tcp would.
  void ConnectsLikeTheKernel() {
    cli_->answer = [this](const Argv& argv) -> Status {
      if (argv[1] == "connect") {
        uint32_t polls = 0;
        for (const auto& arg : argv) {
          if (arg.rfind("--nr-poll-queues=", 0) == 0) polls = std::stoul(arg.substr(17));
        }
        Controller("nvme1", "tcp", polls);
      }
      return OkStatus();
    };
  }
  // nvme1's digests declared off (the kernel shows none: some source must say), nvme-cli's config in the tree.
  ReconnectLever Lever(bool dry_run = false) {
    ReconnectOptions options{tmp_ / "sys", 1, dry_run, cli_};
    options.nvme_cli_config = tmp_ / "etc/nvme/config.json";
    options.declared_digests = declared_;
    return ReconnectLever(std::move(options));
  }
  static LeverTarget Nvme1() { return LeverTarget{"nvme1", 1}; }
  static Steps Found(const std::string& polls) {
    return {{std::string(kName) + " connect",
             R"(["--transport=tcp","--traddr=127.0.0.1","--trsvcid=4420","--nqn=nqn.2026-12.io.nvme-adapt:fabrics",)"
             R"("--hostnqn=nqn.2014-08.org.nvmexpress:uuid:h1","--hostid=h1"])"},
            {std::string(kName) + " nr_poll_queues", polls}};
  }

  TempDir tmp_;
  std::map<std::string, ConnectionDigests> declared_{{"nvme1", {false, false, std::nullopt, "levers.controllers (nvme1)"}}};
  std::shared_ptr<FakeCli> cli_ = std::make_shared<FakeCli>();
};


}  // namespace nvmeadapt::actuate
