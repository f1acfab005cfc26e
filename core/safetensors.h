// safetensors files (the format of Hugging Face's `safetensors` package): an 8-byte little-endian
// header length N, N bytes of JSON header, then the tensors' raw little-endian bytes.
//
// The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end)} (offsets
// relative to the start of the data section) and may hold "__metadata__", a string -> string
// map. Readers here validate everything and refuse what does not fit; writers are atomic
// (core/atomic_file.h). Assumes a little-endian host.
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

struct SafetensorsFile {
  SafetensorsMetadata metadata;
  std::vector<NamedTensor> tensors;  // in the order of their data offsets

  // The tensor called `name`, or nullptr.
  const NamedTensor* Find(const std::string& name) const;
};

// Header lengths above this are refused before anything is allocated (the limit the reference
// implementation uses).
constexpr uint64_t kSafetensorsMaxHeaderBytes = 100000000;

// The bytes of a file holding `tensors` (data in the given order) and `metadata`. The header is
// padded with spaces so the data section starts at a multiple of 8 bytes. Throws
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
// (in range, non-overlapping, covering the data section with no gap). Throws
// std::invalid_argument "PATH: what is wrong" for a damaged or unsupported file and
// std::runtime_error when it cannot be read. Never reads out of bounds on any input.
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
