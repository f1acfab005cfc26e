// CRC-32C: the standard check values (RFC 3720's iSCSI vectors), and the CPU instruction's path
// against the portable tables on every length and alignment the slicing touches.
#include "core/crc32c.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace cugym {
namespace {

TEST(Crc32c, StandardVectors) {
  std::vector<uint8_t> bytes(32, 0);
  EXPECT_EQ(Crc32c(bytes.data(), 32), 0x8A9136AAu);
  std::fill(bytes.begin(), bytes.end(), 0xFF);
  EXPECT_EQ(Crc32c(bytes.data(), 32), 0x62A8AB43u);
  for (int i = 0; i < 32; ++i) bytes[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(Crc32c(bytes.data(), 32), 0x46DD794Eu);
  EXPECT_EQ(detail::Crc32cPortable(bytes.data(), 32), 0x46DD794Eu);
  EXPECT_EQ(detail::Crc32cPortable("123456789", 9), 0xE3069283u);
}

TEST(Crc32c, HardwareAgreesWithTheTables) {
  RecordProperty("hardware", detail::Crc32cHardware() ? "sse4.2" : "none");
  std::mt19937 gen(7);
  std::vector<uint8_t> bytes(4096 + 16);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(gen());
  for (std::size_t offset = 0; offset < 8; ++offset) {
    for (std::size_t size : {0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 4096}) {
      const uint32_t start = static_cast<uint32_t>(gen());
      EXPECT_EQ(Crc32c(bytes.data() + offset, size, start), detail::Crc32cPortable(bytes.data() + offset, size, start))
          << "offset " << offset << ", size " << size;
    }
  }
  // Split anywhere: the continued CRC is the CRC of the whole.
  const uint32_t whole = Crc32c(bytes.data(), 1000);
  for (std::size_t cut : {0, 1, 5, 8, 13, 999, 1000})
    EXPECT_EQ(Crc32c(bytes.data() + cut, 1000 - cut, Crc32c(bytes.data(), cut)), whole);
}

}  // namespace
}  // namespace cugym
