// The one atomic file writer: complete files under their name, replacement, no temporary file
// left on success or failure, the umask respected.
#include "core/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace cugym {
namespace {
namespace fs = std::filesystem;

// A fresh empty folder for one test, removed at the end.
class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("cugym_atomic_" + std::to_string(getpid()) + "_" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<std::string> Listing() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  static std::string Contents(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }

  fs::path dir_;
};

TEST_F(AtomicFileTest, WritesTheWholeFileUnderItsName) {
  const std::string bytes = std::string("binary\0data\n", 12) + std::string(100000, 'x');
  WriteFileAtomically(Path("a.bin"), bytes);
  EXPECT_EQ(Contents(Path("a.bin")), bytes);
  EXPECT_EQ(Listing(), std::vector<std::string>{"a.bin"});
}

TEST_F(AtomicFileTest, ReplacesAnExistingFile) {
  WriteFileAtomically(Path("config.toml"), "old, and longer than the new one\n");
  WriteFileAtomically(Path("config.toml"), "new\n");
  EXPECT_EQ(Contents(Path("config.toml")), "new\n");
  EXPECT_EQ(Listing(), std::vector<std::string>{"config.toml"});
}

TEST_F(AtomicFileTest, AMissingFolderIsAnErrorNamingThePath) {
  const std::string path = Path("no/such/folder/x.txt");
  try {
    WriteFileAtomically(path, "x");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
  }
  EXPECT_TRUE(Listing().empty());
}

TEST_F(AtomicFileTest, AThrowingWriterLeavesTheTargetAndNoTemporaryFile) {
  WriteFileAtomically(Path("keep.txt"), "precious");
  EXPECT_THROW(WriteFileAtomically(Path("keep.txt"),
                                   [](FILE* f) {
                                     std::fputs("half of it", f);
                                     throw std::runtime_error("encoder failed");
                                   }),
               std::runtime_error);
  EXPECT_EQ(Contents(Path("keep.txt")), "precious");
  EXPECT_EQ(Listing(), std::vector<std::string>{"keep.txt"});
}

TEST_F(AtomicFileTest, RenameFailureLeavesNoTemporaryFile) {
  fs::create_directories(Path("taken"));  // a folder cannot be replaced by a file
  EXPECT_THROW(WriteFileAtomically(Path("taken"), "x"), std::runtime_error);
  EXPECT_EQ(Listing(), std::vector<std::string>{"taken"});
}

TEST_F(AtomicFileTest, UncommittedFileIsRemovedAndTempNameKeepsTheExtension) {
  {
    AtomicFile file(Path("clip.gif"));
    EXPECT_EQ(fs::path(file.temp_path()).parent_path(), dir_);
    EXPECT_EQ(fs::path(file.temp_path()).extension(), ".gif");  // ffmpeg picks the format by it
    EXPECT_EQ(file.temp_path().find(Path(".clip.tmp.")), 0u) << file.temp_path();
    EXPECT_TRUE(fs::exists(file.temp_path()));
    AtomicFile other(Path("clip.gif"));
    EXPECT_NE(other.temp_path(), file.temp_path());
  }
  EXPECT_TRUE(Listing().empty());
}

TEST_F(AtomicFileTest, AnotherProcessMayFillTheTemporaryFileByName) {
  AtomicFile file(Path("video.mp4"));
  std::ofstream(file.temp_path(), std::ios::binary | std::ios::trunc) << "encoded";
  file.Commit();
  EXPECT_EQ(Contents(Path("video.mp4")), "encoded");
  EXPECT_EQ(Listing(), std::vector<std::string>{"video.mp4"});
  EXPECT_THROW(file.Commit(), std::logic_error);
}

TEST_F(AtomicFileTest, NewFilesFollowTheUmask) {
  // Created with 0666 and the umask taken off, as open(2) or fopen would: not a fixed mode.
  const mode_t old = umask(0);
  WriteFileAtomically(Path("a"), "x");
  umask(027);
  WriteFileAtomically(Path("b"), "x");
  umask(old);
  struct stat a {
  }, b{};
  ASSERT_EQ(stat(Path("a").c_str(), &a), 0);
  ASSERT_EQ(stat(Path("b").c_str(), &b), 0);
  EXPECT_EQ(a.st_mode & 0777, 0666u);
  EXPECT_EQ(b.st_mode & 0777, 0640u);
}

// A group's files reach their names only at its Commit, all of them, with nothing else left; until
// then the targets keep their old contents.
TEST_F(AtomicFileTest, AGroupRenamesItsFilesAtItsCommit) {
  WriteFileAtomically(Path("best.safetensors"), "old");
  AtomicFileGroup group;
  WriteFileAtomically(Path("best.safetensors"), "new");
  WriteFileAtomically(Path("eval.json"), "{}");
  fs::create_directories(Path("run"));
  WriteFileAtomically(Path("run/model.safetensors"), "model");
  EXPECT_EQ(Contents(Path("best.safetensors")), "old");
  EXPECT_FALSE(fs::exists(Path("eval.json")));
  EXPECT_EQ(Listing().size(), 4u) << "two temporary files beside best.safetensors and run/";
  group.Commit();
  EXPECT_EQ(Contents(Path("best.safetensors")), "new");
  EXPECT_EQ(Contents(Path("eval.json")), "{}");
  EXPECT_EQ(Contents(Path("run/model.safetensors")), "model");
  EXPECT_EQ(Listing(), (std::vector<std::string>{"best.safetensors", "eval.json", "run"}));
  // After its commit the thread writes as before: at once.
  WriteFileAtomically(Path("eval.json"), "{\"a\": 1}");
  EXPECT_EQ(Contents(Path("eval.json")), "{\"a\": 1}");
  EXPECT_THROW(group.Commit(), std::logic_error);
}

TEST_F(AtomicFileTest, AGroupNotCommittedLeavesTheTargetsAsTheyWere) {
  WriteFileAtomically(Path("a"), "old");
  {
    AtomicFileGroup group;
    WriteFileAtomically(Path("a"), "new");
    WriteFileAtomically(Path("b"), "new");
    EXPECT_THROW(AtomicFileGroup(), std::logic_error) << "groups do not nest";
  }
  EXPECT_EQ(Contents(Path("a")), "old");
  EXPECT_EQ(Listing(), std::vector<std::string>{"a"});
  WriteFileAtomically(Path("b"), "plain");  // no group any more
  EXPECT_EQ(Contents(Path("b")), "plain");
}

// A rename that fails names its target; the files renamed before it stay, the rest leave no
// temporary file.
TEST_F(AtomicFileTest, AGroupsFailedRenameNamesTheFile) {
  fs::create_directories(Path("taken"));
  AtomicFileGroup group;
  WriteFileAtomically(Path("first"), "1");
  WriteFileAtomically(Path("taken"), "2");
  WriteFileAtomically(Path("last"), "3");
  try {
    group.Commit();
    ADD_FAILURE() << "the rename over a folder succeeded";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(Path("taken") + ": cannot rename ", 0), 0u) << e.what();
  }
  EXPECT_EQ(Contents(Path("first")), "1");
  EXPECT_EQ(Listing(), (std::vector<std::string>{"first", "taken"}));
}

}  // namespace
}  // namespace cugym
