// Byte flags (done flags, reset masks) as bit masks, to find the few set ones among many: a branch
// per flag, or per word of flags, mispredicts often when the set flags are few and scattered.
#pragma once

#include <cstdint>
#include <cstring>

namespace cugym {

// Bit j: whether x[j] | y[j] is nonzero, for the 64 bytes from x and from y. No branch: eight
// bytes are read as a word, bit 7 of each byte says whether it is nonzero, and a multiply gathers
// those eight bits into one byte (byte j of the word, a flag of index 8w + j on a little-endian
// host, to bit 56 + j). Host code.
inline uint64_t NonzeroMask64(const uint8_t* x, const uint8_t* y) {
  constexpr uint64_t kLow7 = 0x7F7F7F7F7F7F7F7Fu, kHigh = 0x8080808080808080u;
  uint64_t mask = 0;
  for (int w = 0; w < 8; ++w) {
    uint64_t wx, wy;
    std::memcpy(&wx, x + 8 * w, 8);
    std::memcpy(&wy, y + 8 * w, 8);
    const uint64_t v = wx | wy;
    const uint64_t nonzero = (((v & kLow7) + kLow7) | v) & kHigh;
    mask |= (((nonzero >> 7) * 0x0102040810204080u) >> 56) << (8 * w);
  }
  return mask;
}

}  // namespace cugym
