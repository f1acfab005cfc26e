// RGB frames and PNG files. PNG is written by cugym's own small encoder (zlib's format with
// fixed-Huffman deflate), so `cugym record` needs no library; reading uses libpng where the build
// found it (tests read frames back with it, which also checks the encoder against libpng).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cugym {

// 8-bit RGB, rows top to bottom, no padding: Gymnasium's rgb_array (H, W, 3) layout.
struct Image {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> rgb;

  const uint8_t* At(int x, int y) const { return &rgb[(static_cast<std::size_t>(y) * width + x) * 3]; }
};

// The bytes of a PNG file (8-bit RGB, no interlace) holding `image`. Throws std::runtime_error for
// an empty image or one whose rgb does not hold width * height * 3 bytes.
std::vector<uint8_t> EncodePng(const Image& image);
// Writes EncodePng(image) with WriteFileAtomically (core/atomic_file.h), so `path` is never left
// half-written. Throws std::runtime_error when the file cannot be written.
void WritePng(const std::string& path, const Image& image);

// Whether ReadPng works in this build (libpng was found).
bool CanReadPng();
// Reads an 8-bit PNG as RGB. Throws std::invalid_argument for a file that is not one, and
// std::runtime_error in a build without libpng.
Image ReadPng(const std::string& path);

}  // namespace cugym
