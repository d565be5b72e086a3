// SPDX-License-Identifier: Apache-2.0
// Finding 4 of issue 15 and the campaign's hostile runtime dir: whatever a user who may write the driver
// socket directory leaves there, discovery refuses it with the reason, attaches to no pid a peer merely
// claims, and keeps a bounded amount of what peers say. Prints the peak RSS so that it can be quoted.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "agent/discover/control_client.h"
#include "agent/discover/discovery.h"
#include "tests/unit/fake_uvnvme.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::discover {
namespace {

using nvmeadapt::testing::FakeUvnvmeServer;
using nvmeadapt::testing::TempDir;

const uint32_t kPid = static_cast<uint32_t>(getpid());
const std::string kPidText = std::to_string(kPid);

// A peer that answers any connection with `bytes` of text and no newline, then closes.
class FloodingPeer {
 public:
  FloodingPeer(const std::string& path, size_t bytes) : bytes_(bytes) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd_, 4) != 0) {
      throw std::runtime_error("flooding peer: cannot listen on " + path + ": " + std::strerror(errno));
    }
    thread_ = std::thread([this] { Serve(); });
  }
  ~FloodingPeer() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
  }

 private:
  void Serve() {
    const std::string chunk(64 * 1024, 'A');
    while (!stop_) {
      const int client = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) return;
      for (size_t sent = 0; sent < bytes_;) {
        const ssize_t n = send(client, chunk.data(), std::min(chunk.size(), bytes_ - sent), MSG_NOSIGNAL);
        if (n <= 0) break;  // the agent hung up once it had read its bound
        sent += static_cast<size_t>(n);
      }
      close(client);
    }
  }

  int fd_ = -1;
  size_t bytes_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

long PeakRssKiB() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

class HostileRuntimeDir : public ::testing::Test {
 protected:
  HostileRuntimeDir() {
    std::filesystem::create_directories(tmp_ / "run/uvnvme");
    std::filesystem::create_directories(tmp_ / "elsewhere");
    options_ = DiscoveryOptions::UnderRoot(tmp_.path());
    options_.kernel = false;
    options_.socket_timeout_ms = 500;
  }
  std::string Socket(const std::string& name) const { return tmp_ / ("run/uvnvme/" + name); }
  // The one skipped entry for `path`, which must exist; the snapshot must have no controller.
  Error RefusalFor(const std::string& path) {
    const Snapshot snapshot = Discover(options_);
    EXPECT_TRUE(snapshot.controllers.empty()) << snapshot.controllers[0].name << " was believed";
    for (const Skipped& s : snapshot.skipped) {
      if (s.object == path) return s.error;
    }
    ADD_FAILURE() << "no refusal for " << path;
    return Error{};
  }

  TempDir tmp_;
  DiscoveryOptions options_;
};

TEST_F(HostileRuntimeDir, ASymlinkToASocketIsNotFollowed) {
  FakeUvnvmeServer real(tmp_ / ("elsewhere/" + kPidText + ".sock"), kPid, {{0, 1, "interrupt"}});
  std::filesystem::create_symlink(real.path(), Socket(kPidText + ".sock"));
  const Error error = RefusalFor(Socket(kPidText + ".sock"));
  EXPECT_EQ(error.code, ErrorCode::kPermissionDenied);
  EXPECT_NE(error.message.find("a symlink"), std::string::npos) << error.message;
  EXPECT_TRUE(real.Requests().empty()) << "the real socket behind the link was connected to";
}

TEST_F(HostileRuntimeDir, ARegularFileNamedSockIsRefused) {
  nvmeadapt::testing::WriteFile(Socket("77.sock"), "{\"ok\": true}\n");
  const Error error = RefusalFor(Socket("77.sock"));
  EXPECT_EQ(error.code, ErrorCode::kPermissionDenied);
  EXPECT_NE(error.message.find("not a socket file"), std::string::npos) << error.message;
}

TEST_F(HostileRuntimeDir, ASocketOwnedByAnotherUserThanItsListenerIsRefused) {
  ASSERT_EQ(geteuid(), 0u) << "this test needs root: it gives the socket file to another user (uid 65534)";
  FakeUvnvmeServer server(Socket(kPidText + ".sock"), kPid, {{0, 1, "interrupt"}});
  ASSERT_EQ(lchown(server.path().c_str(), 65534, 65534), 0) << std::strerror(errno);
  const Error error = RefusalFor(server.path());
  EXPECT_EQ(error.code, ErrorCode::kPermissionDenied);
  EXPECT_NE(error.message.find("owned by uid 65534 but served by uid 0"), std::string::npos) << error.message;
}

TEST_F(HostileRuntimeDir, APeerLyingAboutItsPidIsRefused) {
  // The uprobes would go to pid 1 if its word were taken.
  FakeUvnvmeServer liar(Socket("driver.sock"), 1, {{0, 1, "interrupt"}});
  const Error error = RefusalFor(liar.path());
  EXPECT_EQ(error.code, ErrorCode::kPermissionDenied);
  EXPECT_NE(error.message.find("reports pid 1 but its socket is served by pid " + kPidText), std::string::npos)
      << error.message;
}

TEST_F(HostileRuntimeDir, ASocketNamedForAnotherPidIsRefused) {
  FakeUvnvmeServer impostor(Socket("1.sock"), kPid, {{0, 1, "interrupt"}});
  const Error error = RefusalFor(impostor.path());
  EXPECT_EQ(error.code, ErrorCode::kPermissionDenied);
  EXPECT_NE(error.message.find("named for pid 1 but served by pid " + kPidText), std::string::npos)
      << error.message;
}

TEST_F(HostileRuntimeDir, ASymlinkedOrWorldWritableDirectoryIsRefused) {
  std::filesystem::remove(tmp_ / "run/uvnvme");
  std::filesystem::create_directories(tmp_ / "elsewhere/uvnvme");
  FakeUvnvmeServer server(tmp_ / ("elsewhere/uvnvme/" + kPidText + ".sock"), kPid, {{0, 1, "interrupt"}});
  std::filesystem::create_directory_symlink(tmp_ / "elsewhere/uvnvme", tmp_ / "run/uvnvme");
  Error error = RefusalFor(tmp_ / "run/uvnvme");
  EXPECT_NE(error.message.find("not a directory"), std::string::npos) << error.message;

  std::filesystem::remove(tmp_ / "run/uvnvme");
  std::filesystem::create_directories(tmp_ / "run/uvnvme");
  ASSERT_EQ(chmod((tmp_ / "run/uvnvme").c_str(), 0777), 0);
  error = RefusalFor(tmp_ / "run/uvnvme");
  EXPECT_NE(error.message.find("writable by every user without the sticky bit"), std::string::npos)
      << error.message;
  ASSERT_EQ(chmod((tmp_ / "run/uvnvme").c_str(), 01777), 0);  // /tmp-like: owners keep their sockets
  EXPECT_TRUE(Discover(options_).skipped.empty());
}

TEST_F(HostileRuntimeDir, APeerSendingAMegabyteCostsABoundedReadAndABoundedRecord) {
  FloodingPeer flood(Socket(kPidText + ".sock"), 1 << 20);
  const long before_kib = PeakRssKiB();
  size_t kept = 0;
  for (int scan = 0; scan < 20; ++scan) {
    const Snapshot snapshot = Discover(options_);
    ASSERT_EQ(snapshot.skipped.size(), 1u);
    EXPECT_EQ(snapshot.skipped[0].error.code, ErrorCode::kIo);
    EXPECT_NE(snapshot.skipped[0].error.message.find("reply longer than"), std::string::npos)
        << snapshot.skipped[0].error.message.substr(0, 200);
    kept = std::max(kept, snapshot.skipped[0].error.message.size());
  }
  const long after_kib = PeakRssKiB();
  std::printf("hostile runtime dir: 20 scans of a peer sending 1 MiB: peak RSS %ld KiB before, %ld KiB after, "
              "longest kept error %zu bytes\n",
              before_kib, after_kib, kept);
  EXPECT_LE(kept, 512u);
  EXPECT_LT(after_kib - before_kib, 1024) << "reading a flooding peer grew the peak RSS by over 1 MiB";
}

TEST_F(HostileRuntimeDir, ALongDriverErrorIsKeptShortAndPrintable) {
  FakeUvnvmeServer server(Socket(kPidText + ".sock"), kPid, {{0, 1, "interrupt"}});
  server.RefuseNextSetMode(std::string(60 * 1024, 'E') + "\x1b[31m");
  auto client = ControlClient::Connect(server.path(), 1000);
  ASSERT_TRUE(client) << client.error().message;
  auto reply = client->Call({{"op", "set_mode"}, {"ctrl", 0}, {"qid", 1}, {"mode", "poll"}});
  ASSERT_FALSE(reply);
  EXPECT_EQ(reply.error().code, ErrorCode::kRefused);
  EXPECT_LT(reply.error().message.size(), 512u) << reply.error().message.size();
  EXPECT_EQ(reply.error().message.find('\x1b'), std::string::npos);
  EXPECT_NE(reply.error().message.find("(61445 bytes)"), std::string::npos) << reply.error().message;
}

TEST_F(HostileRuntimeDir, AFloodOfSocketsIsAskedOnlyUpToTheBound) {
  for (int i = 0; i < 300; ++i) nvmeadapt::testing::MakeStaleSocket(Socket("s" + std::to_string(i) + ".sock"));
  const Snapshot snapshot = Discover(options_);
  EXPECT_EQ(snapshot.skipped.size(), 257u) << "256 stale sockets and one line for the rest";
  // None is a running driver's PID.sock: they fill the room drivers leave, and the rest is said once.
  const bool said = std::any_of(snapshot.skipped.begin(), snapshot.skipped.end(), [](const Skipped& s) {
    return s.error.message.find("300 *.sock names that are no running driver's PID.sock") != std::string::npos;
  });
  EXPECT_TRUE(said) << snapshot.skipped.front().error.message;
}

}  // namespace
}  // namespace nvmeadapt::discover
