// cugym's own PNG encoder: a zlib stream of one fixed-Huffman deflate block (RFC 1950/1951) with
// greedy LZ77 matching, CRC-32 per chunk and Adler-32 over the raw rows. Frames of flat-coloured
// shapes compress well this way (a white row is a handful of length-258 matches at distance 3),
// and it needs no library, so `cugym record` writes PNG in every build.
#include <algorithm>
#include <array>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "render/image.h"

namespace cugym {
namespace {

uint32_t Crc32(const uint8_t* data, std::size_t size, uint32_t crc = 0) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t n = 0; n < 256; ++n) {
      uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  crc = ~crc;
  for (std::size_t i = 0; i < size; ++i) crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

uint32_t Adler32(const std::vector<uint8_t>& data) {
  constexpr uint32_t kMod = 65521;
  uint32_t a = 1, b = 0;
  std::size_t i = 0;
  while (i < data.size()) {
    // 5552 bytes is the most that cannot overflow 32 bits before the modulo (zlib's NMAX).
    const std::size_t end = std::min(data.size(), i + 5552);
    for (; i < end; ++i) {
      a += data[i];
      b += a;
    }
    a %= kMod;
    b %= kMod;
  }
  return (b << 16) | a;
}

// Deflate's bit order: values LSB first; Huffman codes MSB first (Put reverses them).
class BitWriter {
 public:
  explicit BitWriter(std::vector<uint8_t>* out) : out_(out) {}
  void PutBits(uint32_t value, int count) {
    bits_ |= static_cast<uint64_t>(value) << filled_;
    filled_ += count;
    while (filled_ >= 8) {
      out_->push_back(static_cast<uint8_t>(bits_));
      bits_ >>= 8;
      filled_ -= 8;
    }
  }
  void PutCode(uint32_t code, int length) {
    uint32_t reversed = 0;
    for (int k = 0; k < length; ++k) reversed |= ((code >> k) & 1u) << (length - 1 - k);
    PutBits(reversed, length);
  }
  void Flush() {
    if (filled_ > 0) out_->push_back(static_cast<uint8_t>(bits_));
    bits_ = 0;
    filled_ = 0;
  }

 private:
  std::vector<uint8_t>* out_;
  uint64_t bits_ = 0;
  int filled_ = 0;
};

// The fixed literal/length code of RFC 1951 section 3.2.6.
void PutLiteralOrLength(BitWriter& bits, int symbol) {
  if (symbol < 144) {
    bits.PutCode(0x30 + symbol, 8);
  } else if (symbol < 256) {
    bits.PutCode(0x190 + symbol - 144, 9);
  } else if (symbol < 280) {
    bits.PutCode(symbol - 256, 7);
  } else {
    bits.PutCode(0xC0 + symbol - 280, 8);
  }
}

constexpr int kLengthBase[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
constexpr int kLengthExtra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                  2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
constexpr int kDistBase[30] = {1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
                               193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
constexpr int kDistExtra[30] = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

void PutMatch(BitWriter& bits, int length, int distance) {
  int l = 28;
  while (kLengthBase[l] > length) --l;
  PutLiteralOrLength(bits, 257 + l);
  bits.PutBits(static_cast<uint32_t>(length - kLengthBase[l]), kLengthExtra[l]);
  int d = 29;
  while (kDistBase[d] > distance) --d;
  bits.PutCode(static_cast<uint32_t>(d), 5);
  bits.PutBits(static_cast<uint32_t>(distance - kDistBase[d]), kDistExtra[d]);
}

// One final fixed-Huffman block. Greedy matching with the most recent position of each 3-byte
// hash: enough for rendered frames, where the repeats are runs and the row above.
void Deflate(const std::vector<uint8_t>& data, std::vector<uint8_t>* out) {
  constexpr int kWindow = 32768, kMaxMatch = 258, kHashBits = 15;
  BitWriter bits(out);
  bits.PutBits(1, 1);  // BFINAL
  bits.PutBits(1, 2);  // BTYPE 01: fixed Huffman codes
  std::vector<int32_t> head(std::size_t{1} << kHashBits, -1);
  const auto hash = [&](std::size_t i) {
    const uint32_t v = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16);
    return (v * 2654435761u) >> (32 - kHashBits);
  };
  const std::size_t n = data.size();
  std::size_t i = 0;
  while (i < n) {
    int length = 0, distance = 0;
    if (i + 3 <= n) {
      const uint32_t h = hash(i);
      const int32_t candidate = head[h];
      head[h] = static_cast<int32_t>(i);
      if (candidate >= 0 && i - candidate <= kWindow) {
        const std::size_t limit = std::min<std::size_t>(kMaxMatch, n - i);
        std::size_t len = 0;
        while (len < limit && data[candidate + len] == data[i + len]) ++len;
        if (len >= 3) {
          length = static_cast<int>(len);
          distance = static_cast<int>(i - candidate);
        }
      }
    }
    if (length == 0) {
      PutLiteralOrLength(bits, data[i]);
      ++i;
      continue;
    }
    PutMatch(bits, length, distance);
    for (std::size_t k = i + 1; k < i + length && k + 3 <= n; ++k) head[hash(k)] = static_cast<int32_t>(k);
    i += length;
  }
  PutLiteralOrLength(bits, 256);  // end of block
  bits.Flush();
}

void PutU32(std::vector<uint8_t>* out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<uint8_t>(v >> shift));
}

void PutChunk(std::vector<uint8_t>* out, const char* type, const std::vector<uint8_t>& data) {
  PutU32(out, static_cast<uint32_t>(data.size()));
  const std::size_t start = out->size();
  out->insert(out->end(), type, type + 4);
  out->insert(out->end(), data.begin(), data.end());
  PutU32(out, Crc32(out->data() + start, out->size() - start));
}

}  // namespace

std::vector<uint8_t> EncodePng(const Image& image) {
  if (image.width <= 0 || image.height <= 0)
    throw std::runtime_error("cannot encode an empty image (" + std::to_string(image.width) + "x" +
                             std::to_string(image.height) + ") as PNG");
  const std::size_t row_bytes = static_cast<std::size_t>(image.width) * 3;
  if (image.rgb.size() != row_bytes * image.height)
    throw std::runtime_error("image of " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                             " holds " + std::to_string(image.rgb.size()) + " bytes, not width * height * 3");
  // The raw scanlines: filter type 0 (none) then the row.
  std::vector<uint8_t> raw;
  raw.reserve((row_bytes + 1) * image.height);
  for (int y = 0; y < image.height; ++y) {
    raw.push_back(0);
    raw.insert(raw.end(), image.rgb.begin() + y * row_bytes, image.rgb.begin() + (y + 1) * row_bytes);
  }
  std::vector<uint8_t> zlib = {0x78, 0x01};  // deflate, 32 KiB window; (0x78 * 256 + 0x01) % 31 == 0
  Deflate(raw, &zlib);
  PutU32(&zlib, Adler32(raw));

  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  std::vector<uint8_t> header;
  PutU32(&header, static_cast<uint32_t>(image.width));
  PutU32(&header, static_cast<uint32_t>(image.height));
  header.insert(header.end(), {8, 2, 0, 0, 0});  // 8-bit, RGB, deflate, adaptive filters, no interlace
  PutChunk(&png, "IHDR", header);
  PutChunk(&png, "IDAT", zlib);
  PutChunk(&png, "IEND", {});
  return png;
}

void WritePng(const std::string& path, const Image& image) {
  const std::vector<uint8_t> png = EncodePng(image);
  WriteFileAtomically(path, [&](FILE* file) {
    if (std::fwrite(png.data(), 1, png.size(), file) != png.size())
      throw std::runtime_error("cannot write '" + path + "'");
  });
}

}  // namespace cugym
