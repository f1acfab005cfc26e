// safetensors reading (strict: core/json.h parses the header) and writing (core/atomic_file.h).
#include "core/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "core/atomic_file.h"
#include "core/crc32c.h"
#include "core/json.h"

namespace cugym {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors data is little-endian; cugym copies it as is");

namespace {

// A non-negative integer token (no sign, fraction or exponent) below 2^62.
bool ParseCount(const JsonValue& v, uint64_t* out) {
  if (v.kind != JsonKind::kNumber || v.text.empty()) return false;
  uint64_t value = 0;
  for (char c : v.text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<uint64_t>(c - '0');
    if (value >= (uint64_t{1} << 62)) return false;
  }
  if (v.text.size() > 1 && v.text[0] == '0') return false;
  *out = value;
  return true;
}

bool DTypeFromName(const std::string& name, DType* out) {
  if (name == "F32") {
    *out = DType::kF32;
    return true;
  }
  if (name == "I32") {
    *out = DType::kI32;
    return true;
  }
  if (name == "I64") {
    *out = DType::kI64;
    return true;
  }
  return false;
}

bool IsOtherSafetensorsDType(const std::string& name) {
  static const char* const kOthers[] = {"BOOL",    "U8",  "I8",      "U16",     "I16",     "U32",
                                        "U64",     "F16", "BF16",    "F64",     "F8_E4M3", "F8_E5M2",
                                        "F8_E8M0", "F4",  "F6_E2M3", "F6_E3M2", "C64"};
  return std::find_if(std::begin(kOthers), std::end(kOthers), [&](const char* other) { return name == other; }) !=
         std::end(kOthers);
}

uint64_t ReadU64Le(const std::string& bytes) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  return n;
}

void CheckTensorForWriting(const NamedTensor& t, const std::string& where) {
  if (t.name.empty()) throw std::invalid_argument(where + ": a tensor has an empty name");
  if (t.name == "__metadata__") throw std::invalid_argument(where + ": '__metadata__' is reserved, not a tensor name");
  for (int64_t d : t.shape) {
    if (d < 0) throw std::invalid_argument(where + ": tensor '" + t.name + "' has a negative dimension");
  }
  uint64_t bytes = static_cast<uint64_t>(t.NumElements()) * DTypeSize(t.dtype);
  if (bytes != t.data.size()) {
    throw std::invalid_argument(where + ": tensor '" + t.name + "' holds " + std::to_string(t.data.size()) +
                                " bytes, its shape and dtype need " + std::to_string(bytes));
  }
}

struct TensorEntry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

// The header length from the first 8 bytes, checked against the limit and the file size.
uint64_t CheckedHeaderLength(const std::string& first_bytes, uint64_t file_size, const std::string& name) {
  if (file_size < 8) {
    throw std::invalid_argument(name + ": too short for a safetensors file (" + std::to_string(file_size) +
                                " bytes, the header length alone takes 8)");
  }
  const uint64_t header_len = ReadU64Le(first_bytes);
  if (header_len > kSafetensorsMaxHeaderBytes) {
    throw std::invalid_argument(name + ": header length " + std::to_string(header_len) + " exceeds the limit of " +
                                std::to_string(kSafetensorsMaxHeaderBytes) + " bytes");
  }
  if (header_len > file_size - 8) {
    throw std::invalid_argument(name + ": header length " + std::to_string(header_len) +
                                " runs past the end of the file (" + std::to_string(file_size) + " bytes)");
  }
  return header_len;
}

std::string HexCrc(uint32_t crc) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", crc);
  return buf;
}

// The checksums of kSafetensorsChecksumKey's value, in order; false unless it is a comma-separated
// list of 8-hex-digit values (an empty value is an empty list).
bool ParseChecksums(const std::string& text, std::vector<uint32_t>* out) {
  if (text.empty()) return true;
  std::size_t at = 0;
  while (true) {
    if (text.size() - at < 8) return false;
    uint32_t value = 0;
    for (std::size_t i = at; i < at + 8; ++i) {
      const char c = text[i];
      const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (digit < 0) return false;
      value = value << 4 | static_cast<uint32_t>(digit);
    }
    out->push_back(value);
    at += 8;
    if (at == text.size()) return true;
    if (text[at] != ',') return false;
    ++at;
  }
}

}  // namespace

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "F32";
    case DType::kI32:
      return "I32";
    case DType::kI64:
      return "I64";
  }
  return "?";
}

std::size_t DTypeSize(DType dtype) { return dtype == DType::kI64 ? 8 : 4; }

int64_t NamedTensor::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

NamedTensor NamedTensor::FromF32(std::string name, std::vector<int64_t> shape, const float* values) {
  NamedTensor t{std::move(name), DType::kF32, std::move(shape), {}};
  t.data.resize(static_cast<std::size_t>(t.NumElements()) * sizeof(float));
  if (!t.data.empty()) std::memcpy(t.data.data(), values, t.data.size());
  return t;
}

NamedTensor NamedTensor::FromI64(std::string name, std::vector<int64_t> shape, const int64_t* values) {
  NamedTensor t{std::move(name), DType::kI64, std::move(shape), {}};
  t.data.resize(static_cast<std::size_t>(t.NumElements()) * sizeof(int64_t));
  if (!t.data.empty()) std::memcpy(t.data.data(), values, t.data.size());
  return t;
}

std::vector<float> NamedTensor::ToF32() const {
  if (dtype != DType::kF32) {
    throw std::invalid_argument("tensor '" + name + "' is " + DTypeName(dtype) + ", expected F32");
  }
  std::vector<float> out(data.size() / sizeof(float));
  if (!out.empty()) std::memcpy(out.data(), data.data(), data.size());
  return out;
}

std::vector<int64_t> NamedTensor::ToI64() const {
  if (dtype == DType::kI64) {
    std::vector<int64_t> out(data.size() / sizeof(int64_t));
    if (!out.empty()) std::memcpy(out.data(), data.data(), data.size());
    return out;
  }
  if (dtype == DType::kI32) {
    std::vector<int32_t> raw(data.size() / sizeof(int32_t));
    if (!raw.empty()) std::memcpy(raw.data(), data.data(), data.size());
    return std::vector<int64_t>(raw.begin(), raw.end());
  }
  throw std::invalid_argument("tensor '" + name + "' is " + DTypeName(dtype) + ", expected I64 or I32");
}

const NamedTensor* SafetensorsFile::Find(const std::string& name) const {
  for (const NamedTensor& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::string EncodeSafetensors(const std::vector<NamedTensor>& tensors, const SafetensorsMetadata& metadata) {
  SafetensorsMetadata with_checksums = metadata;
  std::string& checksums = with_checksums[kSafetensorsChecksumKey];
  checksums.clear();
  for (const NamedTensor& t : tensors)
    checksums += (checksums.empty() ? "" : ",") + HexCrc(Crc32c(t.data.data(), t.data.size()));
  std::string header = "{\"__metadata__\":{";
  bool first = true;
  for (const auto& [key, value] : with_checksums) {
    if (!first) header += ',';
    first = false;
    header += JsonString(key) + ':' + JsonString(value);
  }
  header += '}';
  uint64_t offset = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const NamedTensor& t = tensors[i];
    CheckTensorForWriting(t, "safetensors");
    for (std::size_t j = 0; j < i; ++j) {
      if (tensors[j].name == t.name) throw std::invalid_argument("safetensors: duplicate tensor name '" + t.name + "'");
    }
    if (!first) header += ',';
    first = false;
    header += JsonString(t.name) + ":{\"dtype\":\"";
    header += DTypeName(t.dtype);
    header += "\",\"shape\":[";
    for (std::size_t d = 0; d < t.shape.size(); ++d) {
      if (d > 0) header += ',';
      header += std::to_string(t.shape[d]);
    }
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + t.data.size()) + "]}";
    offset += t.data.size();
  }
  header += '}';
  // Spaces after the JSON (valid whitespace) so the data starts 8-byte aligned.
  while ((8 + header.size()) % 8 != 0) header += ' ';

  std::string out;
  out.reserve(8 + header.size() + offset);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out += static_cast<char>((n >> (8 * i)) & 0xFF);
  out += header;
  for (const NamedTensor& t : tensors) out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  return out;
}

void WriteSafetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const SafetensorsMetadata& metadata) {
  WriteFileAtomically(path, EncodeSafetensors(tensors, metadata));
}

SafetensorsFile ParseSafetensors(const std::string& bytes, const std::string& name) {
  auto fail = [&](const std::string& what) -> void { throw std::invalid_argument(name + ": " + what); };
  const uint64_t file_size = bytes.size();
  const uint64_t header_len = CheckedHeaderLength(bytes, file_size, name);
  if (header_len == 0 || bytes[8] != '{') fail("the header does not start with '{'");
  const std::string header = bytes.substr(8, header_len);
  const uint64_t data_begin = 8 + header_len;
  const uint64_t data_len = file_size - data_begin;

  JsonValue root = ParseJson(header, name + ": bad header JSON");
  if (root.kind != JsonKind::kObject) fail("the header is not a JSON object");

  SafetensorsFile file;
  std::vector<TensorEntry> entries;
  for (const auto& [key, value] : root.members) {
    if (key == "__metadata__") {
      if (value.kind != JsonKind::kObject) fail("__metadata__ is not an object");
      for (const auto& [mkey, mvalue] : value.members) {
        if (mvalue.kind != JsonKind::kString) fail("__metadata__ value of \"" + mkey + "\" is not a string");
        file.metadata[mkey] = mvalue.text;
      }
      continue;
    }
    const std::string what = "tensor '" + key + "'";
    if (key.empty()) fail("a tensor has an empty name");
    if (value.kind != JsonKind::kObject) fail(what + ": expected an object");
    const JsonValue* dtype = nullptr;
    const JsonValue* shape = nullptr;
    const JsonValue* offsets = nullptr;
    for (const auto& [field, fvalue] : value.members) {
      if (field == "dtype")
        dtype = &fvalue;
      else if (field == "shape")
        shape = &fvalue;
      else if (field == "data_offsets")
        offsets = &fvalue;
      else
        fail(what + ": unknown field \"" + field + "\"");
    }
    if (dtype == nullptr || shape == nullptr || offsets == nullptr) {
      fail(what + ": missing " + std::string(dtype == nullptr ? "dtype" : shape == nullptr ? "shape" : "data_offsets"));
    }
    TensorEntry entry{key, DType::kF32, {}, 0, 0};
    if (dtype->kind != JsonKind::kString) fail(what + ": dtype is not a string");
    if (!DTypeFromName(dtype->text, &entry.dtype)) {
      fail(what + ": " + (IsOtherSafetensorsDType(dtype->text) ? "unsupported" : "unknown") + " dtype \"" +
           dtype->text + "\" (cugym reads F32, I32 and I64)");
    }
    if (shape->kind != JsonKind::kArray) fail(what + ": shape is not an array");
    // Elements times dtype size must equal the byte range, which is at most the file size, so
    // the running product is bounded as it grows (unless a dimension is 0).
    uint64_t elements = 1;
    bool zero = false;
    for (const JsonValue& d : shape->items) {
      uint64_t dim = 0;
      if (!ParseCount(d, &dim)) fail(what + ": shape holds something other than a non-negative integer");
      entry.shape.push_back(static_cast<int64_t>(dim));
      if (dim == 0) zero = true;
      if (!zero) {
        if (dim > file_size || elements > file_size / dim) {
          fail(what + ": shape has more elements than the file has bytes");
        }
        elements *= dim;
      }
    }
    if (zero) elements = 0;
    if (offsets->kind != JsonKind::kArray || offsets->items.size() != 2 ||
        !ParseCount(offsets->items[0], &entry.begin) || !ParseCount(offsets->items[1], &entry.end)) {
      fail(what + ": data_offsets is not a pair of non-negative integers");
    }
    if (entry.end < entry.begin) {
      fail(what + ": data_offsets [" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) +
           "] end before they begin");
    }
    if (entry.end > data_len) {
      fail(what + ": data_offsets [" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) +
           "] out of range (the data section has " + std::to_string(data_len) + " bytes)");
    }
    const uint64_t need = elements * DTypeSize(entry.dtype);
    if (entry.end - entry.begin != need) {
      std::string dims;
      for (int64_t d : entry.shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
      fail(what + ": shape [" + dims + "] of " + DTypeName(entry.dtype) + " needs " + std::to_string(need) +
           " bytes, data_offsets give " + std::to_string(entry.end - entry.begin));
    }
    entries.push_back(std::move(entry));
  }

  // The tensors must tile the data section exactly: sorted by offset, each begins where the
  // previous one ended, the first at 0 and the last at the end.
  std::sort(entries.begin(), entries.end(), [](const TensorEntry& a, const TensorEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t cursor = 0;
  for (const TensorEntry& e : entries) {
    if (e.begin < cursor)
      fail("tensor '" + e.name + "' overlaps another tensor (data_offsets begin at " + std::to_string(e.begin) +
           ", the previous tensor ends at " + std::to_string(cursor) + ")");
    if (e.begin > cursor)
      fail("gap in the data section: bytes [" + std::to_string(cursor) + ", " + std::to_string(e.begin) +
           ") belong to no tensor");
    cursor = e.end;
  }
  if (cursor != data_len) {
    fail("the data section has " + std::to_string(data_len) + " bytes, the tensors cover " + std::to_string(cursor));
  }

  // The checksums, one per tensor in offset order (as EncodeSafetensors writes them).
  std::vector<uint32_t> checksums;
  const auto checksum_entry = file.metadata.find(kSafetensorsChecksumKey);
  const bool checksummed = checksum_entry != file.metadata.end();
  if (checksummed) {
    if (!ParseChecksums(checksum_entry->second, &checksums))
      fail(std::string("__metadata__ \"") + kSafetensorsChecksumKey +
           "\" is not a list of 8-digit hex CRC-32C values separated by commas");
    if (checksums.size() != entries.size())
      fail(std::string("__metadata__ \"") + kSafetensorsChecksumKey + "\" holds " + std::to_string(checksums.size()) +
           " checksums for " + std::to_string(entries.size()) + " tensors");
    file.metadata.erase(checksum_entry);
  }

  file.tensors.reserve(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    TensorEntry& e = entries[i];
    const unsigned char* src = reinterpret_cast<const unsigned char*>(bytes.data()) + data_begin + e.begin;
    if (checksummed) {
      const uint32_t crc = Crc32c(src, e.end - e.begin);
      if (crc != checksums[i])
        fail("tensor '" + e.name + "' is damaged: its CRC-32C is 0x" + HexCrc(crc) + ", the file recorded 0x" +
             HexCrc(checksums[i]));
    }
    NamedTensor t{std::move(e.name), e.dtype, std::move(e.shape), {}};
    t.data.assign(src, src + (e.end - e.begin));
    file.tensors.push_back(std::move(t));
  }
  file.checksummed = checksummed;
  return file;
}

SafetensorsFile ReadSafetensors(const std::string& path) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (!error && std::filesystem::is_directory(status))
    throw std::runtime_error(path + ": is a folder, not a safetensors file");
  if (!error && !std::filesystem::is_regular_file(status))
    throw std::runtime_error(path + ": not a regular file (safetensors files are read by size)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  if (size < 0) throw std::runtime_error(path + ": cannot read its size");
  in.seekg(0, std::ios::beg);
  // Check the header length against the file size before reading a possibly huge file whole.
  std::string bytes(static_cast<std::size_t>(std::min<std::streamoff>(size, 8)), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  CheckedHeaderLength(bytes, static_cast<uint64_t>(size), path);
  bytes.resize(static_cast<std::size_t>(size));
  if (size > 8) in.read(bytes.data() + 8, static_cast<std::streamsize>(size - 8));
  if (!in) throw std::runtime_error(path + ": read failed");
  return ParseSafetensors(bytes, path);
}

std::string MetadataNumber(double v) {
  char buf[40];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

double ParseMetadataNumber(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size())
    throw std::invalid_argument(what + " is not a number ('" + text + "')");
  return v;
}

}  // namespace cugym
