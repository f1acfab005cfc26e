// NewestUsableFile: a truncated, an empty or a bit-flipped newest checkpoint falls back to the one
// before it, each skip with its reason; with every file damaged, one line lists them all.
#include "core/checkpoint_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/safetensors.h"

namespace cugym {
namespace {
namespace fs = std::filesystem;

class CheckpointFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("cugym_ckpt_" + std::to_string(::getpid()) + "_" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    paths_.clear();
    // Three checkpoints, newest first, each a few KiB of tensor data.
    for (int step = 3; step >= 1; --step) {
      std::vector<float> values(1000, static_cast<float>(step));
      const std::string path = (dir_ / ("step_" + std::to_string(step) + ".safetensors")).string();
      WriteSafetensors(path, {NamedTensor::FromF32("replay.obs", {1000}, values.data())}, {{"step", "x"}});
      paths_.push_back(path);
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string Bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static void Put(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }
  static void Truncate(const std::string& path) {
    const std::string b = Bytes(path);
    Put(path, b.substr(0, b.size() * 2 / 3));
  }
  static void Empty(const std::string& path) { Put(path, ""); }
  static void FlipOneBit(const std::string& path) {
    std::string b = Bytes(path);
    b[b.size() - 1234] = static_cast<char>(b[b.size() - 1234] ^ 0x10);  // inside replay.obs
    Put(path, b);
  }

  fs::path dir_;
  std::vector<std::string> paths_;  // newest first
};

TEST_F(CheckpointFiles, TheNewestIntactOneIsTaken) {
  const UsableFile usable = NewestUsableFile(paths_);
  EXPECT_EQ(usable.path, paths_[0]);
  EXPECT_TRUE(usable.skipped.empty());
}

TEST_F(CheckpointFiles, ADamagedNewestFallsBackToThePreviousOne) {
  const std::vector<std::pair<std::function<void(const std::string&)>, std::string>> damages = {
      {Truncate, "tensor 'replay.obs': data_offsets [0, 4000] out of range (the data section has"},
      {Empty, "too short for a safetensors file (0 bytes"},
      {FlipOneBit, "tensor 'replay.obs' is damaged: its CRC-32C is 0x"}};
  for (const auto& [damage, why] : damages) {
    SetUp();
    damage(paths_[0]);
    const UsableFile usable = NewestUsableFile(paths_);
    EXPECT_EQ(usable.path, paths_[1]);
    ASSERT_EQ(usable.skipped.size(), 1u);
    EXPECT_EQ(usable.skipped[0].path, paths_[0]);
    EXPECT_EQ(usable.skipped[0].reason.rfind(why, 0), 0u) << usable.skipped[0].reason;
    EXPECT_EQ(SkipLine(usable.skipped[0]), "skipping " + paths_[0] + ": " + usable.skipped[0].reason);
  }
}

TEST_F(CheckpointFiles, EveryFileDamagedIsOneLineListingThem) {
  Truncate(paths_[0]);
  Empty(paths_[1]);
  FlipOneBit(paths_[2]);
  try {
    NewestUsableFile(paths_);
    FAIL() << "a damaged checkpoint was taken";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("no usable checkpoint: " + paths_[0] + " (", 0), 0u) << what;
    EXPECT_NE(what.find("; " + paths_[1] + " (too short"), std::string::npos) << what;
    EXPECT_NE(what.find("; " + paths_[2] + " (tensor 'replay.obs' is damaged"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos);
  }
  EXPECT_THROW(NewestUsableFile({}), std::invalid_argument);
}

TEST_F(CheckpointFiles, AnyVerifyAndAnyException) {
  // A missing file (std::runtime_error from the reader), a verify of the caller's own that keeps
  // what it read, and a multi-line message made one line.
  fs::remove(paths_[0]);
  std::string read;
  const UsableFile usable = NewestUsableFile(paths_, [&](const std::string& path) {
    if (path == paths_[1]) throw std::runtime_error("multi\nline");
    VerifySafetensors(path);
    read = path;
  });
  EXPECT_EQ(usable.path, paths_[2]);
  EXPECT_EQ(read, paths_[2]);
  ASSERT_EQ(usable.skipped.size(), 2u);
  EXPECT_NE(usable.skipped[0].reason.find("cannot open"), std::string::npos) << usable.skipped[0].reason;
  EXPECT_EQ(usable.skipped[1].reason, "multi line");
}

}  // namespace
}  // namespace cugym
