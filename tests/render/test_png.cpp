// cugym's own PNG encoder: known CRC-32 and Adler-32 values in its output, and (where libpng is
// built in) libpng reads back every pixel of flat, noisy and rendered images of awkward sizes.
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "envs/classic/cartpole.h"
#include "render/image.h"
#include "render/surface.h"

namespace cugym {
namespace {

namespace fs = std::filesystem;

uint32_t BigEndian(const std::vector<uint8_t>& bytes, std::size_t at) {
  return (uint32_t{bytes[at]} << 24) | (uint32_t{bytes[at + 1]} << 16) | (uint32_t{bytes[at + 2]} << 8) | bytes[at + 3];
}

TEST(PngEncoder, WritesTheKnownChecksums) {
  const std::vector<uint8_t> png = EncodePng(Image{1, 1, {1, 2, 3}});
  const std::vector<uint8_t> signature = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  ASSERT_GT(png.size(), 8u + 25 + 12 + 12);
  EXPECT_EQ(std::vector<uint8_t>(png.begin(), png.begin() + 8), signature);
  // IHDR: 13 bytes, 1 x 1, 8-bit RGB; then its CRC-32 (0x907753DE for these 17 bytes, as zlib computes it).
  EXPECT_EQ(BigEndian(png, 8), 13u);
  EXPECT_EQ(std::string(png.begin() + 12, png.begin() + 16), "IHDR");
  EXPECT_EQ(BigEndian(png, 16), 1u);
  EXPECT_EQ(BigEndian(png, 20), 1u);
  EXPECT_EQ(png[24], 8);
  EXPECT_EQ(png[25], 2);
  EXPECT_EQ(BigEndian(png, 29), 0x907753DEu);
  // Every PNG ends with the same IEND chunk, CRC-32 0xAE426082.
  const std::vector<uint8_t> iend = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82};
  EXPECT_EQ(std::vector<uint8_t>(png.end() - 12, png.end()), iend);
  // The zlib stream's Adler-32 over the raw row {filter 0, 1, 2, 3}: a = 1 + 6 = 7, b = 1 + 2 + 4 + 7 = 14.
  EXPECT_EQ(BigEndian(png, png.size() - 12 - 8), 0x000E0007u);
  EXPECT_THROW(EncodePng(Image{2, 2, {1, 2, 3}}), std::runtime_error);
}

Image Noise(int w, int h, uint32_t seed) {
  Image image{w, h, std::vector<uint8_t>(static_cast<std::size_t>(w) * h * 3)};
  for (uint8_t& v : image.rgb) {
    seed = seed * 1664525u + 1013904223u;
    v = static_cast<uint8_t>(seed >> 24);
  }
  return image;
}

TEST(PngEncoder, LibpngReadsEveryPixelBack) {
  if (!CanReadPng()) GTEST_SKIP() << "built without libpng";
  const fs::path dir = fs::temp_directory_path() / "cugym_png_encoder_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  OffscreenSurface cartpole(600, 400);
  CartPole::Draw(CartPole::Params{}, CartPole::State{0.3f, 0.0f, 0.1f, 0.0f}, cartpole.canvas());
  Image stripes = Noise(300, 200, 1);
  for (std::size_t k = 0; k < stripes.rgb.size(); ++k) stripes.rgb[k] = (k / 900) % 2 ? stripes.rgb[k] : 7;
  const std::vector<Image> images = {Image{1, 1, {0, 128, 255}},
                                     Image{5, 3, std::vector<uint8_t>(45, 255)},
                                     Noise(7, 13, 2),
                                     Noise(400, 300, 3),  // incompressible: literals only
                                     stripes,             // long matches and literals mixed
                                     cartpole.Read()};
  for (const Image& image : images) {
    const std::string path = (dir / "x.png").string();
    WritePng(path, image);
    const Image back = ReadPng(path);
    EXPECT_EQ(back.width, image.width);
    EXPECT_EQ(back.height, image.height);
    EXPECT_TRUE(back.rgb == image.rgb) << image.width << "x" << image.height;
  }
  // A rendered frame compresses: 720,000 bytes of pixels in a few KiB.
  EXPECT_LT(EncodePng(cartpole.Read()).size(), 32u * 1024);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cugym
