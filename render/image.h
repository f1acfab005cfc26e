// RGB frames and PNG files.
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

// Writes `image` as PNG with WriteFileAtomically (core/atomic_file.h), so `path` is never left
// half-written. Throws std::runtime_error when the file cannot be written.
void WritePng(const std::string& path, const Image& image);
// Reads an 8-bit PNG as RGB. Throws std::invalid_argument for a file that is not one.
Image ReadPng(const std::string& path);

}  // namespace cugym
