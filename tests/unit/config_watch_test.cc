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

TEST(ConfigWatch, TheKubeletSymlinkSwapIsOneChange) {
  testing::TempDir dir;
  KubeletVolume volume(dir.path());
  ChangeCounter changes;
  auto watch = ConfigWatch::Start(volume.config(), changes.callback(), kSettleMs);
  ASSERT_TRUE(watch) << watch.error().message;
  volume.Publish(R"({"logLevel": "debug"})");
  EXPECT_EQ(changes.WaitFor(1), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(4 * kSettleMs));
  EXPECT_EQ(changes.WaitFor(2, 0ms), 1) << "one swap answered more than once";
  volume.Publish(R"({"logLevel": "info"})");
  EXPECT_EQ(changes.WaitFor(2), 2);
}

TEST(ConfigWatch, AWriteInPlaceAndARenameOverTheFileAreChanges) {
  testing::TempDir dir;
  const std::string config = dir / "config.json";
  WriteFile(config, "{}");
  ChangeCounter changes;
  auto watch = ConfigWatch::Start(config, changes.callback(), kSettleMs);
  ASSERT_TRUE(watch) << watch.error().message;
  WriteFile(config, R"({"logLevel": "debug"})");
  EXPECT_EQ(changes.WaitFor(1), 1);
  WriteFile(dir / "config.json.new", R"({"logLevel": "info"})");
  fs::rename(dir / "config.json.new", config);
  EXPECT_EQ(changes.WaitFor(2), 2);
}

TEST(ConfigWatch, OtherFilesAndAVanishedFileAreNoChange) {
  testing::TempDir dir;
  const std::string config = dir / "config.json";
  WriteFile(config, "{}");
  ChangeCounter changes;
  auto watch = ConfigWatch::Start(config, changes.callback(), kSettleMs);
  ASSERT_TRUE(watch) << watch.error().message;
  WriteFile(dir / "unrelated.json", "{}");
  fs::remove(config);
  std::this_thread::sleep_for(std::chrono::milliseconds(4 * kSettleMs));
  EXPECT_EQ(changes.WaitFor(1, 0ms), 0);
  WriteFile(config, R"({"logLevel": "debug"})");  // back, with other contents
  EXPECT_EQ(changes.WaitFor(1), 1);
}

TEST(ConfigWatch, AMissingDirectoryIsAnErrorNamingIt) {
  testing::TempDir dir;
  auto watch = ConfigWatch::Start(dir / "absent/config.json", [] {});
  ASSERT_FALSE(watch);
  EXPECT_EQ(watch.error().code, ErrorCode::kNotFound);
  EXPECT_NE(watch.error().message.find(dir / "absent"), std::string::npos) << watch.error().message;
}

}  // namespace
}  // namespace nvmeadapt::daemon
