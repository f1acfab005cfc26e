// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): the checksum of TensorBoard's record
// framing (core/event_file.h) and of cugym's safetensors files (core/safetensors.h). One
// implementation: the SSE4.2 crc32 instruction where the CPU has it (about 8 bytes per 3 cycles),
// else slicing-by-8 tables (a few bytes per cycle), chosen once at run time.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cugym {

// The CRC-32C of `size` bytes, continuing from `crc` (0 to start): Crc32c(b, m, Crc32c(a, n)) is
// the CRC of a followed by b. Crc32c("123456789", 9) == 0xE3069283 (the standard check value).
uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);

namespace detail {
// The portable tables alone, whatever the CPU (tests compare it with Crc32c).
uint32_t Crc32cPortable(const void* data, size_t size, uint32_t crc = 0);
// Whether Crc32c uses the CPU's crc32 instruction.
bool Crc32cHardware();
}  // namespace detail

}  // namespace cugym
