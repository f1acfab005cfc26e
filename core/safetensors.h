// safetensors files (the format of Hugging Face's `safetensors` package): an 8-byte little-endian
// header length N, N bytes of JSON header, then the tensors' raw little-endian bytes.
//
// The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end)} (offsets
// relative to the start of the data section) and may hold "__metadata__", a string -> string
// map. Readers here validate everything and refuse what does not fit; writers are atomic
// (core/atomic_file.h). Assumes a little-endian host.
//
// Checksums: every file written here carries the CRC-32C (core/crc32c.h) of each tensor's bytes in
// its metadata under kSafetensorsChecksumKey, and every file read here that has the key is
// checked against it, so a damaged file is refused by file and tensor name instead of being used.
// Files without the key (written by other tools or by older cugym releases) load unchecked. The key
// is ordinary metadata to other readers (Python's `safetensors` loads these files unchanged).
// Format: docs/file-formats.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cugym {

// Element types cugym reads and writes. Other safetensors dtypes (F16, BF16, U8, ...) are
// refused with a message naming them.
enum class DType { kF32, kI32, kI64 };

const char* DTypeName(DType dtype);  // "F32", "I32", "I64"
std::size_t DTypeSize(DType dtype);  // bytes per element

using SafetensorsMetadata = std::map<std::string, std::string>;

struct NamedTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;       // empty for a scalar (one element)
  std::vector<unsigned char> data;  // little-endian, NumElements() * DTypeSize(dtype) bytes

  int64_t NumElements() const;

  static NamedTensor FromF32(std::string name, std::vector<int64_t> shape, const float* values);
  static NamedTensor FromI64(std::string name, std::vector<int64_t> shape, const int64_t* values);
  // The values; throws std::invalid_argument naming the tensor when the dtype differs
  // (ToI64 also takes I32).
  std::vector<float> ToF32() const;
  std::vector<int64_t> ToI64() const;
};

// The metadata key of the tensors' checksums: one CRC-32C per tensor, in the order of their data
// offsets, each as 8 lowercase hex digits, separated by commas ("1c291ca3,00000000,..."). A
// checksum per tensor names the damaged tensor without a second pass over the data.
inline constexpr const char* kSafetensorsChecksumKey = "cugym.crc32c";

struct SafetensorsFile {
  SafetensorsMetadata metadata;      // without kSafetensorsChecksumKey (see `checksummed`)
  std::vector<NamedTensor> tensors;  // in the order of their data offsets
  bool checksummed = false;          // the file had checksums, and every tensor matched them

  // The tensor called `name`, or nullptr.
  const NamedTensor* Find(const std::string& name) const;
};

// Header lengths above this are refused before anything is allocated (the limit the reference
// implementation uses).
constexpr uint64_t kSafetensorsMaxHeaderBytes = 100000000;

// The bytes of a file holding `tensors` (data in the given order) and `metadata`, plus the
// tensors' checksums under kSafetensorsChecksumKey (replacing any value `metadata` gives it). The
// header is padded with spaces so the data section starts at a multiple of 8 bytes. Throws
// std::invalid_argument for an empty, duplicate or reserved name or a data size that does not
// match the shape.
std::string EncodeSafetensors(const std::vector<NamedTensor>& tensors, const SafetensorsMetadata& metadata = {});

// Writes EncodeSafetensors(...) to `path` with WriteFileAtomically (core/atomic_file.h), so a
// crash never leaves a half-written file under the real name. Throws std::runtime_error when the
// file cannot be written.
void WriteSafetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const SafetensorsMetadata& metadata = {});

// Reads and validates a file: header length (at most kSafetensorsMaxHeaderBytes and inside the
// file), strict JSON, known keys, dtypes, shapes (elements * dtype size == byte range), offsets
// (in range, non-overlapping, covering the data section with no gap), and, where the file has
// them, the tensors' checksums ("PATH: tensor 'replay.obs' is damaged: its CRC-32C is 0x...,
// the file recorded 0x..."). Throws std::invalid_argument "PATH: what is wrong" for a damaged or
// unsupported file and std::runtime_error when it cannot be read. Never reads out of bounds on
// any input.
SafetensorsFile ReadSafetensors(const std::string& path);

// The same validation on a file's bytes already in memory; `name` starts the error messages.
SafetensorsFile ParseSafetensors(const std::string& bytes, const std::string& name);

// Metadata values are text. A double written by MetadataNumber reads back (strtod, or
// ParseMetadataNumber) as the same double, in the shortest of %.15g..%.17g ("0.9", not
// "0.90000000000000002"). ParseMetadataNumber throws std::invalid_argument naming `what`
// unless all of `text` is a number.
std::string MetadataNumber(double v);
double ParseMetadataNumber(const std::string& text, const std::string& what);

}  // namespace cugym
