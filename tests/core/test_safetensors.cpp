// safetensors: round trip, atomic writes, and a clear std::invalid_argument for every kind of
// damaged file (plus a fuzz loop: mutated files load or throw, never crash; ASan watches).
#include "core/safetensors.h"

#include "core/crc32c.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace cugym {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "cugym_st_" + std::to_string(::getpid()) + "_" + name;
}

uint64_t HeaderLength(const std::string& bytes) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  return n;
}

// A file from a header text and data bytes.
std::string Make(const std::string& header, const std::string& data = "") {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return out + header + data;
}

std::string ErrorOf(const std::string& bytes) {
  try {
    ParseSafetensors(bytes, "t.safetensors");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

void ExpectError(const std::string& bytes, const std::string& fragment) {
  const std::string e = ErrorOf(bytes);
  EXPECT_EQ(e.rfind("t.safetensors: ", 0), 0u) << e;
  EXPECT_NE(e.find(fragment), std::string::npos) << "expected '" << fragment << "' in: " << e;
}

std::vector<NamedTensor> SampleTensors() {
  const float w[6] = {1.5f, -2.0f, 3.25f, 0.0f, -0.0f, 1e-30f};
  const int64_t steps[1] = {123456789012345};
  NamedTensor i32{"counts", DType::kI32, {2}, {}};
  i32.data = {1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};  // 1, -1
  return {NamedTensor::FromF32("layer.weight", {2, 3}, w), NamedTensor::FromI64("step", {}, steps), i32,
          NamedTensor::FromF32("empty", {0, 4}, nullptr)};
}

TEST(Safetensors, RoundTrip) {
  const SafetensorsMetadata meta = {{"env", "CartPole-v1"}, {"quote\"and\\slash\n", "unicode \xc3\xa9 \t"}};
  const std::string bytes = EncodeSafetensors(SampleTensors(), meta);
  EXPECT_EQ((8 + HeaderLength(bytes)) % 8, 0u) << "data section 8-byte aligned";
  SafetensorsFile file = ParseSafetensors(bytes, "mem");
  EXPECT_EQ(file.metadata, meta);
  ASSERT_EQ(file.tensors.size(), 4u);
  EXPECT_EQ(file.Find("layer.weight")->ToF32(), (std::vector<float>{1.5f, -2.0f, 3.25f, 0.0f, -0.0f, 1e-30f}));
  EXPECT_EQ(file.Find("step")->ToI64(), (std::vector<int64_t>{123456789012345}));
  EXPECT_TRUE(file.Find("step")->shape.empty());
  EXPECT_EQ(file.Find("counts")->ToI64(), (std::vector<int64_t>{1, -1}));
  EXPECT_EQ(file.Find("empty")->NumElements(), 0);
  EXPECT_EQ(file.Find("nope"), nullptr);
  EXPECT_THROW(file.Find("step")->ToF32(), std::invalid_argument);

  const std::string path = TempPath("rt.safetensors");
  WriteSafetensors(path, SampleTensors(), meta);
  SafetensorsFile again = ReadSafetensors(path);
  EXPECT_EQ(again.metadata, meta);
  EXPECT_EQ(again.Find("layer.weight")->data, file.Find("layer.weight")->data);
  std::remove(path.c_str());
}

TEST(Safetensors, AcceptsWhatOtherWritersProduce) {
  // Keys in any order, whitespace, escapes, offsets listed out of order, no metadata. (The first
  // byte must be '{', as the reference implementation requires.)
  const std::string data("\x01\x00\x00\x00\x02\x00\x00\x00\x00\x00\x80\x3f", 12);
  SafetensorsFile f =
      ParseSafetensors(Make("{\n \"b\" : {\"data_offsets\":[8,12],\"shape\":[],\"dtype\":\"F32\"},\n "
                            "\"a\\u00e9\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]} }   ",
                            data),
                       "x");
  ASSERT_EQ(f.tensors.size(), 2u);
  EXPECT_EQ(f.tensors[0].name, "a\xc3\xa9");
  EXPECT_EQ(f.Find("b")->ToF32(), std::vector<float>{1.0f});
}

TEST(Safetensors, WriteIsAtomicAndLeavesNoTemporaryFile) {
  const std::string dir = TempPath("dir");
  ASSERT_EQ(std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()), 0);
  const std::string path = dir + "/model.safetensors";
  WriteSafetensors(path, SampleTensors());
  WriteSafetensors(path, SampleTensors(), {{"v", "2"}});  // replaces the old file
  EXPECT_EQ(ReadSafetensors(path).metadata.at("v"), "2");
  std::string listing;
  FILE* ls = popen(("ls -A '" + dir + "'").c_str(), "r");
  char buf[256];
  while (fgets(buf, sizeof buf, ls) != nullptr) listing += buf;
  pclose(ls);
  EXPECT_EQ(listing, "model.safetensors\n");
  EXPECT_THROW(WriteSafetensors(dir + "/no/such/dir/x.safetensors", SampleTensors()), std::runtime_error);
  EXPECT_THROW(ReadSafetensors(dir + "/missing.safetensors"), std::runtime_error);
  // A folder or a device is refused by name, before a size that means nothing is used.
  for (const auto& [path, why] : std::vector<std::pair<std::string, std::string>>{
           {dir, ": is a folder, not a safetensors file"},
           {"/dev/zero", ": not a regular file (safetensors files are read by size)"}}) {
    try {
      ReadSafetensors(path);
      ADD_FAILURE() << path << " was read";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(e.what(), path + why);
    }
  }
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST(Safetensors, WriterRefusesBadTensors) {
  std::vector<NamedTensor> t = SampleTensors();
  t[0].data.pop_back();
  EXPECT_THROW(EncodeSafetensors(t), std::invalid_argument);
  t = SampleTensors();
  t[1].name = t[0].name;
  EXPECT_THROW(EncodeSafetensors(t), std::invalid_argument);
  t = SampleTensors();
  t[2].name = "__metadata__";
  EXPECT_THROW(EncodeSafetensors(t), std::invalid_argument);
}

TEST(Safetensors, TruncatedFiles) {
  const std::string good = EncodeSafetensors(SampleTensors(), {{"k", "v"}});
  ExpectError(good.substr(0, 5), "too short");
  ExpectError(good.substr(0, 20), "runs past the end of the file (20 bytes)");
  ExpectError(good.substr(0, good.size() - 3), "out of range (the data section has");  // data cut short
  // Every truncation is refused (the format has no optional tail).
  for (std::size_t n = 0; n < good.size(); ++n) EXPECT_NE(ErrorOf(good.substr(0, n)), "(no error)") << n;
  // Through a file as well.
  const std::string path = TempPath("trunc.safetensors");
  std::ofstream(path, std::ios::binary) << good.substr(0, good.size() / 2);
  EXPECT_THROW(ReadSafetensors(path), std::invalid_argument);
  std::remove(path.c_str());
}

TEST(Safetensors, HeaderLength) {
  std::string huge = Make("{}");
  const uint64_t n = 200000000;  // 200 MB
  for (int i = 0; i < 8; ++i) huge[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  ExpectError(huge, "header length 200000000 exceeds the limit of 100000000 bytes");
  std::string max64 = Make("{}");
  for (int i = 0; i < 8; ++i) max64[i] = '\xff';
  ExpectError(max64, "exceeds the limit");
  ExpectError(Make(""), "does not start with '{'");
  ExpectError(Make("[]"), "does not start with '{'");
  ExpectError(Make(" {}"), "does not start with '{'");
  // A huge length in a small file on disk is refused before the file is read whole.
  const std::string path = TempPath("huge.safetensors");
  std::ofstream(path, std::ios::binary) << huge;
  try {
    ReadSafetensors(path);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": header length", 0), 0u) << e.what();
  }
  std::remove(path.c_str());
}

TEST(Safetensors, BadJson) {
  ExpectError(Make("{"), "bad header JSON");
  ExpectError(Make("{\"a\":}"), "unexpected '}'");
  ExpectError(Make("{\"a\":"), "expected a value, got the end of the input");
  ExpectError(Make("{\"a\":1,}"), "expected a string key");
  ExpectError(Make("{\"a\":[1 2]}"), "expected ']'");
  ExpectError(Make("{\"a\":\"x}"), "unterminated string");
  ExpectError(Make("{\"a\":\"\\q\"}"), "unknown escape");
  ExpectError(Make("{\"a\":\"\\ud800\"}"), "surrogate");
  ExpectError(Make("{\"a\":\"\x01\"}"), "control character");
  ExpectError(Make("{\"a\":\"\xc3\"}"), "invalid UTF-8");
  ExpectError(Make("{\"a\":01}"), "expected '}', got '1'");  // no leading zeros
  ExpectError(Make("{\"a\":-}"), "expected a digit");
  ExpectError(Make("{\"a\":1.}"), "after '.'");
  ExpectError(Make("{\"a\":tru}"), "expected 'true'");
  ExpectError(Make("{} x"), "after the JSON value");
  ExpectError(Make("{}{}"), "after the JSON value");
  ExpectError(Make("{\"a\":1,\"a\":2}"), "duplicate key \"a\"");
  ExpectError(Make("{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}"), "nested deeper");
}

TEST(Safetensors, BadEntries) {
  const std::string d8(8, '\0');
  ExpectError(Make("{\"__metadata__\":[]}"), "__metadata__ is not an object");
  ExpectError(Make("{\"__metadata__\":{\"k\":1}}"), "__metadata__ value of \"k\" is not a string");
  ExpectError(Make("{\"t\":1}"), "tensor 't': expected an object");
  ExpectError(Make("{\"t\":{\"dtype\":\"F32\",\"shape\":[2]}}", d8), "tensor 't': missing data_offsets");
  ExpectError(Make("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1}}", d8),
              "unknown field \"x\"");
  // dtypes
  ExpectError(Make("{\"t\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[0,8]}}", d8),
              "unsupported dtype \"F16\"");
  ExpectError(Make("{\"t\":{\"dtype\":\"F33\",\"shape\":[2],\"data_offsets\":[0,8]}}", d8), "unknown dtype \"F33\"");
  ExpectError(Make("{\"t\":{\"dtype\":3,\"shape\":[2],\"data_offsets\":[0,8]}}", d8), "dtype is not a string");
  // shapes
  ExpectError(Make("{\"t\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", d8),
              "shape [3] of F32 needs 12 bytes, data_offsets give 8");
  ExpectError(Make("{\"t\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", d8), "non-negative integer");
  ExpectError(Make("{\"t\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}", d8), "non-negative integer");
  ExpectError(Make("{\"t\":{\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]}}", d8), "shape is not an array");
  ExpectError(
      Make("{\"t\":{\"dtype\":\"F32\",\"shape\":[4611686018427387903,4611686018427387903],\"data_offsets\":[0,8]}}",
           d8),
      "more elements than the file has bytes");
  ExpectError(Make("{\"t\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,8]}}", d8),
              "non-negative integer");
  // offsets
  ExpectError(Make("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,16]}}", d8),
              "data_offsets [0, 16] out of range (the data section has 8 bytes)");
  ExpectError(Make("{\"t\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", d8), "end before they begin");
  ExpectError(Make("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", d8), "not a pair");
  ExpectError(Make("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,\"8\"]}}", d8), "not a pair");
  ExpectError(Make("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                   "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                   d8),
              "overlaps another tensor");
  ExpectError(Make("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", d8),
              "gap in the data section: bytes [0, 4)");
  ExpectError(Make("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", d8),
              "the data section has 8 bytes, the tensors cover 4");
  ExpectError(Make("{}", "x"), "the data section has 1 bytes, the tensors cover 0");
}

TEST(Safetensors, ChecksumsEveryTensor) {
  const std::string bytes = EncodeSafetensors(SampleTensors(), {{"env", "CartPole-v1"}});
  const std::string header = bytes.substr(8, HeaderLength(bytes));
  // One CRC-32C per tensor in file order; an empty tensor's is 0.
  const std::vector<NamedTensor> t = SampleTensors();
  std::string expected;
  for (const NamedTensor& x : t) {
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", Crc32c(x.data.data(), x.data.size()));
    expected += (expected.empty() ? "" : ",") + std::string(hex);
  }
  EXPECT_NE(header.find("\"cugym.crc32c\":\"" + expected + "\""), std::string::npos) << header;
  const SafetensorsFile file = ParseSafetensors(bytes, "mem");
  EXPECT_TRUE(file.checksummed);
  EXPECT_EQ(file.metadata, (SafetensorsMetadata{{"env", "CartPole-v1"}}));  // the key is the reader's

  // One flipped bit anywhere in a tensor's bytes is refused, naming the file and that tensor.
  const std::size_t data_begin = 8 + HeaderLength(bytes);
  std::size_t at = data_begin;
  for (const NamedTensor& x : t) {
    for (std::size_t byte = 0; byte < x.data.size(); ++byte) {
      std::string bad = bytes;
      bad[at + byte] = static_cast<char>(bad[at + byte] ^ (1 << (byte % 8)));
      ExpectError(bad, "tensor '" + x.name + "' is damaged: its CRC-32C is 0x");
    }
    at += x.data.size();
  }
  EXPECT_EQ(ErrorOf(bytes.substr(0, data_begin) + std::string(bytes.size() - data_begin, '\0')).find('\n'),
            std::string::npos);

  // A stale value given by the caller (metadata read from another file) is replaced.
  std::vector<NamedTensor> changed = SampleTensors();
  changed[0].data[0] ^= 1;
  EXPECT_TRUE(ParseSafetensors(EncodeSafetensors(changed, {{kSafetensorsChecksumKey, expected}}), "m").checksummed);
}

TEST(Safetensors, FilesWithoutChecksumsLoadAndBadListsAreRefused) {
  const std::string d8("\0\0\x80\x3f\0\0\0\x40", 8);  // 1.0f, 2.0f
  const std::string tensor = "\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}";
  const SafetensorsFile plain = ParseSafetensors(Make("{" + tensor + "}", d8), "other-tool");
  EXPECT_FALSE(plain.checksummed);
  EXPECT_EQ(plain.Find("t")->ToF32(), (std::vector<float>{1.0f, 2.0f}));
  const auto with = [&](const std::string& list) {
    return Make("{\"__metadata__\":{\"cugym.crc32c\":\"" + list + "\"}," + tensor + "}", d8);
  };
  char good[9];
  std::snprintf(good, sizeof good, "%08x", Crc32c(d8.data(), 8));
  EXPECT_TRUE(ParseSafetensors(with(good), "m").checksummed);
  ExpectError(with(std::string(good) + ",00000000"), "holds 2 checksums for 1 tensors");
  ExpectError(with(""), "holds 0 checksums for 1 tensors");
  for (const char* bad : {"1234567", "123456789", "1234567G", "1234567A", "12345678,"})
    ExpectError(with(bad), "is not a list of 8-digit hex CRC-32C values");
}

// Random byte flips, insertions and truncations of a valid file: each result loads or throws
// std::invalid_argument; nothing else (no crash, no other exception, no out-of-bounds read).
TEST(Safetensors, FuzzedFilesLoadOrThrow) {
  const std::string good = EncodeSafetensors(SampleTensors(), {{"env", "CartPole-v1"}, {"step", "7"}});
  const std::size_t header_end = 8 + HeaderLength(good);
  std::mt19937 gen(12345);
  const char interesting[] = "{}[]\",:0123456789-.eE\\u \x00\xff";
  int loaded = 0, refused = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::string bytes = good;
    const int edits = 1 + static_cast<int>(gen() % 4);
    for (int e = 0; e < edits; ++e) {
      // Most edits hit the header, where the parsing is.
      const std::size_t pos = gen() % 4 == 0 ? gen() % bytes.size() : gen() % std::min(bytes.size(), header_end);
      switch (gen() % 5) {
        case 0:
          bytes[pos] = static_cast<char>(bytes[pos] ^ (1u << (gen() % 8)));
          break;
        case 1:
          bytes[pos] = interesting[gen() % (sizeof interesting - 1)];
          break;
        case 2:
          bytes.insert(pos, 1, interesting[gen() % (sizeof interesting - 1)]);
          break;
        case 3:
          bytes.erase(pos, 1 + gen() % 3);
          break;
        default:
          bytes.resize(gen() % bytes.size());
          break;
      }
      if (bytes.empty()) break;
    }
    try {
      SafetensorsFile f = ParseSafetensors(bytes, "fuzz");
      for (const NamedTensor& t : f.tensors) {
        ASSERT_EQ(static_cast<uint64_t>(t.NumElements()) * DTypeSize(t.dtype), t.data.size());
      }
      ++loaded;
    } catch (const std::invalid_argument&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 1000);
  RecordProperty("loaded", loaded);
}

}  // namespace
}  // namespace cugym
