// NonzeroMask64 against the plain definition: bit j set exactly where x[j] | y[j] != 0, for any
// byte values (a reset mask may hold any nonzero byte), including 0x80 and 0x7F, whose high and low
// bits the mask's arithmetic treats separately.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "core/flag_mask.h"

namespace cugym {
namespace {

TEST(FlagMask, BitJIsWhetherEitherByteJIsNonzero) {
  std::mt19937 rng(3);
  const uint8_t values[] = {0, 1, 2, 0x7F, 0x80, 0x81, 0xFE, 0xFF};
  for (int trial = 0; trial < 2000; ++trial) {
    uint8_t x[64], y[64];
    const int density = trial % 9;  // from none set to about every byte set
    for (int j = 0; j < 64; ++j) {
      x[j] = static_cast<int>(rng() % 8) < density ? values[1 + rng() % 7] : 0;
      y[j] = static_cast<int>(rng() % 16) < density ? values[rng() % 8] : 0;
    }
    uint64_t want = 0;
    for (int j = 0; j < 64; ++j) want |= static_cast<uint64_t>((x[j] | y[j]) != 0) << j;
    ASSERT_EQ(NonzeroMask64(x, y), want) << "trial " << trial;
  }
}

TEST(FlagMask, EachSingleByteLandsOnItsOwnBit) {
  for (int j = 0; j < 64; ++j) {
    for (int value : {1, 0x80, 0xFF}) {
      uint8_t x[64] = {}, y[64] = {};
      x[j] = static_cast<uint8_t>(value);
      EXPECT_EQ(NonzeroMask64(x, y), uint64_t{1} << j);
      EXPECT_EQ(NonzeroMask64(y, x), uint64_t{1} << j);
    }
  }
}

}  // namespace
}  // namespace cugym
