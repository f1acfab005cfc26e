// TensorBoard event files: CRC-32C and its mask, the byte layout of the records (the test vectors
// of docs/tensorboard.md, checked against protobuf's own serializer), reading back, a torn or
// corrupt tail, and truncation for a resumed run. TensorBoard's own reader checks the files in
// python/tests/test_tensorboard.py.
#include "core/event_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

namespace cugym {
namespace {
namespace fs = std::filesystem;

std::string Hex(const std::string& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

std::string Contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
void Overwrite(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

class EventFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("cugym_events_" + std::to_string(getpid()) + "_" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST(Crc32c, CheckValueAndMask) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(Crc32c("", 0), 0u);
  // Continuing a CRC over a split buffer gives the CRC of the whole.
  EXPECT_EQ(Crc32c("6789", 4, Crc32c("12345", 5)), 0xE3069283u);
  EXPECT_EQ(MaskCrc32c(0), 0xA282EAD8u);
  EXPECT_EQ(MaskCrc32c(0x8000u), 0xA282EAD9u);  // bit 15 rotates to bit 0
}

TEST(EventEncoding, VersionRecordIsTheReferenceBytes) {
  EXPECT_EQ(Hex(FrameRecord(EncodeVersionEvent(1.25))),
            "1800000000000000a37f4b2209000000000000f43f1a0d627261696e2e4576656e743a32280b517b");
}

TEST(EventEncoding, ScalarEventIsProtobufsLayout) {
  EXPECT_EQ(Hex(EncodeScalarEvent(1.5, 3, {{"a", 2.0f}})),
            "09000000000000f83f10032a0a0a080a0161150000004"
            "0");
  // Step 0 is left out (proto3), a zero value is not (a oneof member), a negative step is ten
  // bytes of varint, and two tags share one summary.
  EXPECT_EQ(Hex(EncodeScalarEvent(1.5, 0, {{"a", 0.0f}})), "09000000000000f83f2a0a0a080a01611500000000");
  EXPECT_EQ(Hex(EncodeScalarEvent(0.0, -1, {})),
            "090000000000000000"
            "10ffffffffffffffffff01"
            "2a00");
  EXPECT_EQ(Hex(EncodeScalarEvent(0.0, 1, {{"a", 1.0f}, {"bc", -1.0f}})),
            "0900000000000000001001"
            "2a15"
            "0a080a0161150000803f"
            "0a090a026263150000"
            "80bf");
}

TEST_F(EventFileTest, WritesVersionThenScalarsThatReadBack) {
  std::string path;
  {
    EventFileWriter writer(dir_.string());
    path = writer.path();
    writer.Add(0, {{"charts/SPS", 1.5f}, {"losses/td_loss", 0.0f}});
    writer.Add(300, {{"charts/SPS", -3.25f}});
    writer.Add(int64_t{1} << 40, {{"charts/SPS", std::numeric_limits<float>::infinity()}});
    writer.Add(-5, {{"eval/nan", std::nanf("")}});
    writer.Add(7, {});  // nothing to write
  }
  const std::string name = fs::path(path).filename().string();
  EXPECT_EQ(name.rfind("events.out.tfevents.", 0), 0u) << name;
  EXPECT_EQ(name.find('.', 20) - 20, 10u) << "10-digit seconds: " << name;
  EXPECT_EQ(EventFilesIn(dir_.string()), std::vector<std::string>{path});

  const std::vector<EventRecord> records = ReadEventFile(path);
  ASSERT_EQ(records.size(), 5u);
  EXPECT_EQ(records[0].file_version, "brain.Event:2");
  EXPECT_GT(records[0].wall_time, 1.7e9);
  ASSERT_EQ(records[1].scalars.size(), 2u);
  EXPECT_EQ(records[1].step, 0);
  EXPECT_EQ(records[1].scalars[1].tag, "losses/td_loss");
  EXPECT_EQ(records[2].step, 300);
  EXPECT_EQ(records[2].scalars[0].value, -3.25f);
  EXPECT_EQ(records[3].step, int64_t{1} << 40);
  EXPECT_TRUE(std::isinf(records[3].scalars[0].value));
  EXPECT_EQ(records[4].step, -5);
  EXPECT_TRUE(std::isnan(records[4].scalars[0].value));
  EXPECT_GE(records[4].wall_time, records[0].wall_time);
}

TEST_F(EventFileTest, EachWriterGetsAFileNamedAfterTheEarlierOnes) {
  // One from another process later in this second, or with a clock ahead of this one: the next
  // file's name must still sort after it.
  Overwrite((dir_ / "events.out.tfevents.9999999990.other.1").string(), "");
  EventFileWriter a(dir_.string());
  EventFileWriter b(dir_.string());
  const std::vector<std::string> files = EventFilesIn(dir_.string());
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[1], a.path());
  EXPECT_EQ(files[2], b.path());
  EXPECT_EQ(fs::path(a.path()).filename().string().substr(0, 30), "events.out.tfevents.9999999991");
}

TEST_F(EventFileTest, AMissingFolderIsOneClearError) {
  try {
    EventFileWriter writer((dir_ / "absent").string());
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create the event file"), std::string::npos) << e.what();
  }
}

TEST_F(EventFileTest, ATornOrCorruptRecordEndsTheFile) {
  std::string path;
  {
    EventFileWriter writer(dir_.string());
    path = writer.path();
    for (int step = 1; step <= 3; ++step) writer.Add(step, {{"x", static_cast<float>(step)}});
  }
  const std::string whole = Contents(path);
  Overwrite(path, whole.substr(0, whole.size() - 5));  // killed in the middle of the last record
  EXPECT_EQ(ReadEventFile(path).size(), 3u);
  std::string corrupt = whole;
  const size_t third =
      FrameRecord(EncodeVersionEvent(0)).size() + 2 * FrameRecord(EncodeScalarEvent(0, 1, {{"x", 1}})).size();
  corrupt[third - 1] ^= 1;  // the data CRC of the second scalar record
  Overwrite(path, corrupt);
  EXPECT_EQ(ReadEventFile(path).size(), 2u);
}

TEST_F(EventFileTest, TruncationDropsLaterStepsAndATornTail) {
  std::string path;
  {
    EventFileWriter writer(dir_.string());
    path = writer.path();
    for (int step = 100; step <= 500; step += 100) writer.Add(step, {{"x", static_cast<float>(step)}});
  }
  EXPECT_FALSE(TruncateEventFile(path, 500));  // nothing after 500: left as it was
  const std::string whole = Contents(path);
  Overwrite(path, whole + whole.substr(0, 7));  // a torn record after the last whole one
  EXPECT_TRUE(TruncateEventFile(path, 500));
  EXPECT_EQ(Contents(path), whole);
  EXPECT_TRUE(TruncateEventFile(path, 250));
  const std::vector<EventRecord> records = ReadEventFile(path);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].file_version, "brain.Event:2");
  EXPECT_EQ(records[2].step, 200);
  EXPECT_EQ(Contents(path), whole.substr(0, Contents(path).size()));  // the kept records' bytes, unchanged
  EXPECT_THROW(ReadEventFile((dir_ / "absent").string()), std::runtime_error);
}

}  // namespace
}  // namespace cugym
