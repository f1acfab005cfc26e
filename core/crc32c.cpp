// CRC-32C (see crc32c.h): slicing-by-8 tables, and the SSE4.2 instruction on x86-64 CPUs that
// have it (compiled for SSE4.2 in this one function only, so the build needs no -msse4.2).
#include "core/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define CUGYM_CRC32C_X86 1
#endif

namespace cugym {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // 0x1EDC6F41 reflected

// tables[0] is the byte-at-a-time table; tables[k][b] is the CRC of byte b followed by k zero
// bytes, so eight bytes fold in with eight lookups (slicing-by-8).
using Tables = std::array<std::array<uint32_t, 256>, 8>;

const Tables& CrcTables() {
  static const Tables tables = [] {
    Tables t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int bit = 0; bit < 8; ++bit) c = (c & 1) ? (c >> 1) ^ kPolynomial : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (int k = 1; k < 8; ++k) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFF];
    }
    return t;
  }();
  return tables;
}

// On the inverted CRC (the register), as both implementations below.
uint32_t UpdatePortable(uint32_t crc, const uint8_t* p, size_t size) {
  const Tables& t = CrcTables();
  for (; size >= 8; size -= 8, p += 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= crc;  // little-endian host (as safetensors.cpp asserts)
    crc = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^ t[3][hi & 0xFF] ^
          t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
  }
  for (; size > 0; --size, ++p) crc = t[0][(crc ^ *p) & 0xFF] ^ (crc >> 8);
  return crc;
}

#ifdef CUGYM_CRC32C_X86
__attribute__((target("sse4.2"))) uint32_t UpdateSse42(uint32_t crc, const uint8_t* p, size_t size) {
  uint64_t c = crc;
  for (; size >= 8; size -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
  }
  auto c32 = static_cast<uint32_t>(c);
  for (; size > 0; --size, ++p) c32 = _mm_crc32_u8(c32, *p);
  return c32;
}

bool HaveSse42() {
  static const bool have = __builtin_cpu_supports("sse4.2");
  return have;
}
#endif

}  // namespace

uint32_t Crc32c(const void* data, size_t size, uint32_t crc) {
  const auto* p = static_cast<const uint8_t*>(data);
#ifdef CUGYM_CRC32C_X86
  if (HaveSse42()) return ~UpdateSse42(~crc, p, size);
#endif
  return ~UpdatePortable(~crc, p, size);
}

namespace detail {

uint32_t Crc32cPortable(const void* data, size_t size, uint32_t crc) {
  return ~UpdatePortable(~crc, static_cast<const uint8_t*>(data), size);
}

bool Crc32cHardware() {
#ifdef CUGYM_CRC32C_X86
  return HaveSse42();
#else
  return false;
#endif
}

}  // namespace detail
}  // namespace cugym
