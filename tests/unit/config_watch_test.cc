// SPDX-License-Identifier: Apache-2.0
// The config watch against the three ways a config file changes: the kubelet's `..data` symlink swap, a
// write in place, and a rename over it; and the changes it must not answer.
#include "agent/daemon/config_watch.h"

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <gtest/gtest.h>

#include "test_fs.h"

namespace nvmeadapt::daemon {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr int kSettleMs = 50;

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

// A ConfigMap volume as the kubelet lays it out: ..TIMESTAMP/config.json, ..data -> ..TIMESTAMP,
// config.json -> ..data/config.json.
class KubeletVolume {
 public:
  explicit KubeletVolume(std::string dir) : dir_(std::move(dir)) {
    Publish("{}");
    fs::create_symlink("..data/config.json", dir_ + "/config.json");
  }
  // The kubelet's update: a new timestamped directory, ..data_tmp pointing at it renamed over ..data
  // (the one atomic step), then the old directory removed.
  void Publish(const std::string& text) {
    const std::string version = "..2026_12_01_00_00_00." + std::to_string(++generation_);
    fs::create_directory(dir_ + "/" + version);
    WriteFile(dir_ + "/" + version + "/config.json", text);
    fs::create_symlink(version, dir_ + "/..data_tmp");
    fs::rename(dir_ + "/..data_tmp", dir_ + "/..data");
    if (!current_.empty()) fs::remove_all(dir_ + "/" + current_);
    current_ = version;
  }
  std::string config() const { return dir_ + "/config.json"; }

 private:
  std::string dir_;
  std::string current_;
  int generation_ = 0;
};

class ChangeCounter {
 public:
  std::function<void()> callback() {
    return [this] {
      std::lock_guard lock(mutex_);
      ++count_;
      changed_.notify_all();
    };
  }
  // Waits until at least `n` changes were seen (or the timeout passed) and returns the count.
  int WaitFor(int n, std::chrono::milliseconds timeout = 5s) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, timeout, [&] { return count_ >= n; });
    return count_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int count_ = 0;
};

class ConfigWatchTest : public ::testing::Test {
 protected:
  void Watch(const std::string& config) {
    auto watch = ConfigWatch::Start(config, changes_.callback(), kSettleMs);
    ASSERT_TRUE(watch) << watch.error().message;
    watch_ = std::move(*watch);
  }
  static void Settle() { std::this_thread::sleep_for(std::chrono::milliseconds(4 * kSettleMs)); }

  testing::TempDir dir_;
  ChangeCounter changes_;
  std::unique_ptr<ConfigWatch> watch_;  // last: stops before what its callback uses goes
};

TEST_F(ConfigWatchTest, TheKubeletSymlinkSwapIsOneChange) {
  KubeletVolume volume(dir_.path());
  Watch(volume.config());
  volume.Publish(R"({"logLevel": "debug"})");
  EXPECT_EQ(changes_.WaitFor(1), 1);
  Settle();
  EXPECT_EQ(changes_.WaitFor(2, 0ms), 1) << "one swap answered more than once";
  volume.Publish(R"({"logLevel": "info"})");
  EXPECT_EQ(changes_.WaitFor(2), 2);
}

TEST_F(ConfigWatchTest, AWriteInPlaceAndARenameOverTheFileAreChanges) {
  const std::string config = dir_ / "config.json";
  WriteFile(config, "{}");
  Watch(config);
  WriteFile(config, R"({"logLevel": "debug"})");
  EXPECT_EQ(changes_.WaitFor(1), 1);
  WriteFile(dir_ / "config.json.new", R"({"logLevel": "info"})");
  fs::rename(dir_ / "config.json.new", config);
  EXPECT_EQ(changes_.WaitFor(2), 2);
}

TEST_F(ConfigWatchTest, OtherFilesAndAVanishedFileAreNoChange) {
  const std::string config = dir_ / "config.json";
  WriteFile(config, "{}");
  Watch(config);
  WriteFile(dir_ / "unrelated.json", "{}");
  fs::remove(config);
  Settle();
  EXPECT_EQ(changes_.WaitFor(1, 0ms), 0);
  WriteFile(config, R"({"logLevel": "debug"})");  // back, with other contents
  EXPECT_EQ(changes_.WaitFor(1), 1);
}

TEST_F(ConfigWatchTest, AMissingDirectoryIsAnErrorNamingIt) {
  auto watch = ConfigWatch::Start(dir_ / "absent/config.json", [] {});
  ASSERT_FALSE(watch);
  EXPECT_EQ(watch.error().code, ErrorCode::kNotFound);
  EXPECT_NE(watch.error().message.find(dir_ / "absent"), std::string::npos) << watch.error().message;
}

}  // namespace
}  // namespace nvmeadapt::daemon
