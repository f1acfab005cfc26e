// PNG encoding and decoding through libpng's simplified API.
#include "render/image.h"

#include <png.h>

#include <cstdio>
#include <stdexcept>

#include "core/atomic_file.h"

namespace cugym {

void WritePng(const std::string& path, const Image& image) {
  WriteFileAtomically(path, [&](FILE* file) {
    png_image png{};
    png.version = PNG_IMAGE_VERSION;
    png.width = static_cast<png_uint_32>(image.width);
    png.height = static_cast<png_uint_32>(image.height);
    png.format = PNG_FORMAT_RGB;
    if (!png_image_write_to_stdio(&png, file, 0, image.rgb.data(), image.width * 3, nullptr))
      throw std::runtime_error("cannot write '" + path + "': " + png.message);
  });
}

Image ReadPng(const std::string& path) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&png, path.c_str()))
    throw std::invalid_argument("'" + path + "' is not a readable PNG: " + png.message);
  png.format = PNG_FORMAT_RGB;
  Image image;
  image.width = static_cast<int>(png.width);
  image.height = static_cast<int>(png.height);
  image.rgb.resize(PNG_IMAGE_SIZE(png));
  if (!png_image_finish_read(&png, nullptr, image.rgb.data(), 0, nullptr)) {
    png_image_free(&png);
    throw std::invalid_argument("'" + path + "' is not a readable PNG: " + png.message);
  }
  return image;
}

}  // namespace cugym
