// Reading PNG files through libpng's simplified API, where the build found libpng (writing is
// render/png_encoder.cpp's, in every build).
#include "render/image.h"

#include <stdexcept>

#ifdef CUGYM_HAVE_LIBPNG
#include <png.h>
#endif

namespace cugym {

#ifdef CUGYM_HAVE_LIBPNG

bool CanReadPng() { return true; }

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

#else

bool CanReadPng() { return false; }

Image ReadPng(const std::string& path) {
  throw std::runtime_error("cannot read '" + path + "': this cugym was built without libpng");
}

#endif

}  // namespace cugym
