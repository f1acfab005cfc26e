// OffscreenSurface: an Image and the RasterCanvas that draws into it.
#include "render/surface.h"

#include <stdexcept>
#include <string>

namespace cugym {

OffscreenSurface::OffscreenSurface(int width, int height) {
  if (width <= 0 || height <= 0)
    throw std::invalid_argument("offscreen frame needs a positive size, got " + std::to_string(width) + "x" +
                                std::to_string(height));
  image_.width = width;
  image_.height = height;
  image_.rgb.assign(static_cast<std::size_t>(width) * height * 3, 255);
  canvas_ = std::make_unique<RasterCanvas>(image_.rgb.data(), width, height);
}

}  // namespace cugym
