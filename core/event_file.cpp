// TensorBoard event files (see event_file.h).
#include "core/event_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "core/atomic_file.h"

namespace cugym {
namespace fs = std::filesystem;
namespace {

constexpr uint32_t kMaskDelta = 0xA282EAD8u;

// Protobuf wire format: the four wire types an Event needs.
enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void PutKey(std::string& out, uint32_t field, WireType type) { PutVarint(out, (uint64_t{field} << 3) | type); }
template <typename T>
void PutLittleEndian(std::string& out, T value) {  // x86 and AArch64 Linux are little-endian
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}
void PutBytes(std::string& out, uint32_t field, const std::string& bytes) {
  PutKey(out, field, kLengthDelimited);
  PutVarint(out, bytes.size());
  out += bytes;
}

// Event's fields (tensorboard/compat/proto/event.proto, summary.proto).
constexpr uint32_t kEventWallTime = 1, kEventStep = 2, kEventFileVersion = 3, kEventSummary = 5;
constexpr uint32_t kSummaryValue = 1;
constexpr uint32_t kValueTag = 1, kValueSimpleValue = 2;
constexpr char kFileVersion[] = "brain.Event:2";

std::string EventHeader(double wall_time, int64_t step) {
  std::string out;
  PutKey(out, kEventWallTime, kFixed64);
  PutLittleEndian(out, wall_time);
  if (step != 0) {  // proto3 leaves a zero scalar out
    PutKey(out, kEventStep, kVarint);
    PutVarint(out, static_cast<uint64_t>(step));  // two's complement: a negative step takes 10 bytes
  }
  return out;
}

// A reader of one protobuf message; every Read returns false at the end or on malformed bytes.
class Fields {
 public:
  Fields(const char* data, size_t size) : p_(data), end_(data + size) {}
  bool Next(uint32_t& field, uint32_t& type) {
    uint64_t key;
    if (p_ == end_ || !Varint(key)) return false;
    field = static_cast<uint32_t>(key >> 3);
    type = static_cast<uint32_t>(key & 7);
    return true;
  }
  bool Varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64 && p_ < end_; shift += 7) {
      const auto byte = static_cast<uint8_t>(*p_++);
      v |= uint64_t{byte & 0x7Fu} << shift;
      if (!(byte & 0x80)) return true;
    }
    return false;
  }
  template <typename T>
  bool Fixed(T& v) {
    if (end_ - p_ < static_cast<std::ptrdiff_t>(sizeof(T))) return false;
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return true;
  }
  bool Bytes(const char*& data, size_t& size) {
    uint64_t n;
    if (!Varint(n) || n > static_cast<uint64_t>(end_ - p_)) return false;
    data = p_;
    size = static_cast<size_t>(n);
    p_ += n;
    return true;
  }
  bool Skip(uint32_t type) {
    uint64_t v;
    double d;
    float f;
    const char* data;
    size_t size;
    switch (type) {
      case kVarint:
        return Varint(v);
      case kFixed64:
        return Fixed(d);
      case kLengthDelimited:
        return Bytes(data, size);
      case kFixed32:
        return Fixed(f);
      default:
        return false;
    }
  }

 private:
  const char* p_;
  const char* end_;
};

bool DecodeValue(const char* data, size_t size, Scalar& scalar, bool& simple) {
  Fields in(data, size);
  uint32_t field, type;
  while (in.Next(field, type)) {
    if (field == kValueTag && type == kLengthDelimited) {
      const char* tag;
      size_t n;
      if (!in.Bytes(tag, n)) return false;
      scalar.tag.assign(tag, n);
    } else if (field == kValueSimpleValue && type == kFixed32) {
      if (!in.Fixed(scalar.value)) return false;
      simple = true;
    } else if (!in.Skip(type)) {
      return false;
    }
  }
  return true;
}

bool DecodeEvent(const std::string& payload, EventRecord& record) {
  Fields in(payload.data(), payload.size());
  uint32_t field, type;
  while (in.Next(field, type)) {
    const char* data;
    size_t size;
    uint64_t step;
    if (field == kEventWallTime && type == kFixed64) {
      if (!in.Fixed(record.wall_time)) return false;
    } else if (field == kEventStep && type == kVarint) {
      if (!in.Varint(step)) return false;
      record.step = static_cast<int64_t>(step);
    } else if (field == kEventFileVersion && type == kLengthDelimited) {
      if (!in.Bytes(data, size)) return false;
      record.file_version.assign(data, size);
    } else if (field == kEventSummary && type == kLengthDelimited) {
      if (!in.Bytes(data, size)) return false;
      Fields summary(data, size);
      while (summary.Next(field, type)) {
        if (field != kSummaryValue || type != kLengthDelimited) {
          if (!summary.Skip(type)) return false;
          continue;
        }
        const char* value;
        size_t n;
        if (!summary.Bytes(value, n)) return false;
        Scalar scalar{"", 0.0f};
        bool simple = false;
        if (!DecodeValue(value, n, scalar, simple)) return false;
        if (simple) record.scalars.push_back(scalar);
      }
    } else if (!in.Skip(type)) {
      return false;
    }
  }
  return true;
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read (" + std::strerror(errno) + ")");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The payloads of the whole, intact records at the start of `bytes`.
std::vector<std::string> SplitRecords(const std::string& bytes) {
  std::vector<std::string> payloads;
  size_t at = 0;
  while (bytes.size() - at >= 12) {
    uint64_t length;
    uint32_t length_crc;
    std::memcpy(&length, bytes.data() + at, 8);
    std::memcpy(&length_crc, bytes.data() + at + 8, 4);
    if (MaskCrc32c(Crc32c(bytes.data() + at, 8)) != length_crc) break;
    if (length > bytes.size() - at - 12 || bytes.size() - at - 12 - length < 4) break;
    const char* payload = bytes.data() + at + 12;
    uint32_t payload_crc;
    std::memcpy(&payload_crc, payload + length, 4);
    if (MaskCrc32c(Crc32c(payload, length)) != payload_crc) break;
    payloads.emplace_back(payload, length);
    at += 16 + length;
  }
  return payloads;
}

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

uint32_t MaskCrc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }

std::string EncodeScalarEvent(double wall_time, int64_t step, const std::vector<Scalar>& scalars) {
  std::string summary;
  for (const Scalar& s : scalars) {
    std::string value;
    PutBytes(value, kValueTag, s.tag);
    PutKey(value, kValueSimpleValue, kFixed32);  // a oneof member: written even when 0
    PutLittleEndian(value, s.value);
    PutBytes(summary, kSummaryValue, value);
  }
  std::string event = EventHeader(wall_time, step);
  PutBytes(event, kEventSummary, summary);
  return event;
}

std::string EncodeVersionEvent(double wall_time) {
  std::string event = EventHeader(wall_time, 0);
  PutBytes(event, kEventFileVersion, kFileVersion);
  return event;
}

std::string FrameRecord(const std::string& payload) {
  std::string out;
  const uint64_t length = payload.size();
  PutLittleEndian(out, length);
  PutLittleEndian(out, MaskCrc32c(Crc32c(out.data(), 8)));
  out += payload;
  PutLittleEndian(out, MaskCrc32c(Crc32c(payload.data(), payload.size())));
  return out;
}

EventFileWriter::EventFileWriter(const std::string& dir) {
  char host[256] = "localhost";
  if (gethostname(host, sizeof(host) - 1) != 0) std::strcpy(host, "localhost");
  host[sizeof(host) - 1] = '\0';
  // TensorBoard reads a folder's files in name order, so this one's time is after every earlier
  // file's: a run resumed within the second it was killed in must not sort before that part.
  auto seconds = static_cast<long long>(NowSeconds());
  constexpr char kPrefix[] = "events.out.tfevents.";
  for (const std::string& earlier : EventFilesIn(dir)) {
    const std::string name = fs::path(earlier).filename().string();
    if (name.rfind(kPrefix, 0) == 0)
      seconds = std::max(seconds, std::strtoll(name.c_str() + sizeof(kPrefix) - 1, nullptr, 10) + 1);
  }
  char stem[320];
  std::snprintf(stem, sizeof(stem), "%s%010lld.%s.%ld", kPrefix, seconds, host, static_cast<long>(getpid()));
  // "x": never append to (or clobber) another writer's file, even one that appears meanwhile.
  for (int n = 0; !file_ && n < 1000; ++n) {
    path_ = (fs::path(dir) / (n == 0 ? std::string(stem) : std::string(stem) + "." + std::to_string(n))).string();
    file_ = std::fopen(path_.c_str(), "wbx");
    if (!file_ && errno != EEXIST) break;
  }
  if (!file_) throw std::runtime_error(path_ + ": cannot create the event file (" + std::strerror(errno) + ")");
  const std::string record = FrameRecord(EncodeVersionEvent(NowSeconds()));
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size() || std::fflush(file_) != 0) {
    std::fclose(file_);
    throw std::runtime_error(path_ + ": cannot write (" + std::strerror(errno) + ")");
  }
}

EventFileWriter::~EventFileWriter() { std::fclose(file_); }

void EventFileWriter::Add(int64_t step, const std::vector<Scalar>& scalars) {
  if (scalars.empty()) return;
  const std::string record = FrameRecord(EncodeScalarEvent(NowSeconds(), step, scalars));
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size() || std::fflush(file_) != 0)
    throw std::runtime_error(path_ + ": cannot write (" + std::strerror(errno) + ")");
}

std::vector<EventRecord> ReadEventFile(const std::string& path) {
  std::vector<EventRecord> records;
  for (const std::string& payload : SplitRecords(ReadWholeFile(path))) {
    EventRecord record;
    if (!DecodeEvent(payload, record)) break;
    records.push_back(std::move(record));
  }
  return records;
}

std::vector<std::string> EventFilesIn(const std::string& dir) {
  std::vector<std::string> found;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    if (entry.is_regular_file() && entry.path().filename().string().find("tfevents") != std::string::npos)
      found.push_back(entry.path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

bool TruncateEventFile(const std::string& path, int64_t last_step) {
  const std::string bytes = ReadWholeFile(path);
  std::string kept;
  for (const std::string& payload : SplitRecords(bytes)) {
    EventRecord record;
    if (!DecodeEvent(payload, record)) break;
    if (record.file_version.empty() && record.step > last_step) continue;
    kept += FrameRecord(payload);
  }
  if (kept == bytes) return false;
  WriteFileAtomically(path, kept);
  return true;
}

}  // namespace cugym
